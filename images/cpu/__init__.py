"""Build the CPU job image ``kcoral-job:cpu``: numpy + CPU torch on ``kcoral-base:bookworm``."""

from __future__ import annotations

import contextlib
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import docker
import docker.errors

from kcoral.images.dockerbuild import docker_build
from kcoral.images.errors import ImageBuildError
from kcoral.images.refs import IMAGE_REFS
from kcoral.images.util import image_id, remove_replaced, run_as_job

TORCH_SPEC = "torch==2.13.0"
REQUIREMENTS = (TORCH_SPEC, "numpy")
PYTHON_VERSION = "3.11"  # Debian bookworm's python3
DOCKERFILE = Path(__file__).with_name("Dockerfile")
INSTALL_STAGE_LABEL = "kcoral.stage=cpu-install"
SMOKE_TEST = "import torch, numpy; print(torch.__version__, numpy.__version__)"


def _platforms() -> list[str]:
    """manylinux tags bookworm (glibc 2.36) can run, newest first, for this machine's architecture."""
    arch = platform.machine()
    return [f"manylinux_2_{minor}_{arch}" for minor in range(36, 16, -1)] + [f"manylinux2014_{arch}"]


def download_wheels(dest: Path, log: Callable[[str], None] = print) -> list[Path]:
    """pip-download torch (CPU build) + numpy and their deps as cp311 wheels into ``dest``."""
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--only-binary=:all:",
        "--python-version",
        PYTHON_VERSION,
        "--implementation",
        "cp",
        "--abi",
        "cp311",
        "--dest",
        str(dest),
    ]
    for plat in _platforms():
        cmd += ["--platform", plat]
    cmd += list(REQUIREMENTS)
    log(f"cpu: pip download {' '.join(REQUIREMENTS)} -> {dest}")
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise ImageBuildError(
            f"pip download of {' '.join(REQUIREMENTS)} failed:\n{res.stderr.strip()[-2000:]}\n"
            "(check PyPI access / pip's find-links; the CPU torch wheel must be reachable)"
        )
    wheels = sorted(dest.glob("*.whl"))
    torch_wheels = [w for w in wheels if w.name.startswith("torch-")]
    cuda = [w.name for w in wheels if w.name.startswith(("nvidia_", "nvidia-", "triton-"))]
    if not torch_wheels or "+cpu" not in torch_wheels[0].name or cuda:
        raise ImageBuildError(
            f"pip picked a CUDA torch ({[w.name for w in torch_wheels] + cuda}); put the CPU wheel in pip's "
            "find-links or set PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu"
        )
    return wheels


def _prune_install_stage(client: docker.DockerClient) -> None:
    """Drop the dangling install-stage image (it holds the wheels, ~1 GiB of dead weight)."""
    with contextlib.suppress(docker.errors.DockerException):
        client.images.prune(filters={"dangling": True, "label": INSTALL_STAGE_LABEL})


def build_cpu_image(client: docker.DockerClient, force: bool = False, log: Callable[[str], None] = print) -> str:
    """Make ``kcoral-job:cpu`` if missing (or ``force``); needs the base image; return its image id."""
    ref, base = IMAGE_REFS["cpu"], IMAGE_REFS["base"]
    old = image_id(client, ref)
    if old and not force:
        return old
    if image_id(client, base) is None:
        raise ImageBuildError(f"{base} is missing: build it first (kcoral images build cpu does both)")
    start = time.monotonic()
    ctx = Path(tempfile.mkdtemp(prefix="kcoral-cpu-"))
    try:
        shutil.copy(DOCKERFILE, ctx / "Dockerfile")
        (ctx / "requirements.txt").write_text("\n".join(REQUIREMENTS) + "\n")
        wheels = download_wheels(ctx / "wheels", log)
        size = sum(w.stat().st_size for w in wheels) / 2**20
        log(f"cpu: {len(wheels)} wheels, {size:.0f} MiB; building {ref}")
        new = docker_build(client, ctx, ref, buildargs={"BASE": base}, nocache=force, log=log, prefix="cpu: ")
    finally:
        shutil.rmtree(ctx, ignore_errors=True)
        _prune_install_stage(client)
    log(f"cpu: smoke test as uid 65534: {run_as_job(client, ref, ['python3', '-c', SMOKE_TEST], 'import torch/numpy')}")
    remove_replaced(client, old, new)
    log(f"cpu: built {ref} ({new[:19]}) in {time.monotonic() - start:.1f}s")
    return new
