"""Build the profiler images, each a layer on a job image: ``kcoral-ncu:latest`` (Nsight Compute)
and ``kcoral-iket:latest`` (nvidia-cutlass-dsl with run-iket).

They are for hosts whose jobs run in images (with the NVIDIA container toolkit, or a job image
that carries CUDA). On a host-toolchain server (the H200 reference host) the host's own ncu and
run-iket are what jobs see, and these images are not used.

Nothing is fetched during a build: the IKET wheels are downloaded on the build host for the base
image's Python, and Nsight Compute is copied from an installation on the build host
(``--ncu-dir``, default: the one the ``ncu`` on PATH belongs to).
"""

from __future__ import annotations

import contextlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import docker
import docker.errors

from kcoral.images.dockerbuild import docker_build
from kcoral.images.errors import ImageBuildError
from kcoral.images.refs import IMAGE_REFS, PROFILER_BASE
from kcoral.images.util import image_id, remove_replaced, run_as_job

HERE = Path(__file__).parent
#: exactly what the IKET layer installs (no dependency resolution: nvidia-cutlass-dsl itself would
#: also pull the CUDA 12 libraries); the libs and cuda-bindings must match the driver's CUDA major (13)
IKET_WHEELS = (
    "nvidia-cutlass-dsl==4.8.1",
    "nvidia-cutlass-dsl-libs-base==4.8.1",
    "nvidia-cutlass-dsl-libs-core==4.8.1",
    "nvidia-cutlass-dsl-libs-cu13==4.8.1",
    "nvidia-cuda-nvdisasm==13.5.37",
    "cuda-bindings>=13,<14",
    "cuda-pathfinder",
    "protobuf",
    "typing-extensions",
)
IKET_SMOKE = ["run-iket", "--help"]


@dataclass(frozen=True)
class ProfilerBuild:
    """Options of the profiler image builds."""

    #: the job image the profiler is layered on
    base: str = PROFILER_BASE
    #: the Nsight Compute installation to copy (None: the one of the ``ncu`` on PATH)
    ncu_dir: Path | None = None


def base_python(client: docker.DockerClient, base: str) -> str:
    """``MAJOR.MINOR`` of the base image's python3."""
    if image_id(client, base) is None:
        raise ImageBuildError(
            f"the base image {base} is not present: build or load it first "
            "(Dockerfile.gpu makes kcoral-job:gpu; --base picks another)"
        )
    out = run_as_job(
        client,
        base,
        ["python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        "asking python3 its version",
    )
    return out.splitlines()[-1].strip()


def download_iket_wheels(dest: Path, python: str, log: Callable[[str], None] = print) -> list[Path]:
    """pip-download IKET_WHEELS (no dependencies) as wheels for CPython ``python`` on this architecture."""
    arch = platform.machine()
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--python-version",
        python,
        "--implementation",
        "cp",
        "--dest",
        str(dest),
    ]
    for minor in range(39, 16, -1):
        cmd += ["--platform", f"manylinux_2_{minor}_{arch}"]
    cmd += ["--platform", f"manylinux2014_{arch}", *IKET_WHEELS]
    log(f"iket: pip download for Python {python}: {' '.join(IKET_WHEELS)}")
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise ImageBuildError(f"pip download of the IKET wheels failed:\n{res.stderr.strip()[-2000:]}")
    return sorted(dest.glob("*.whl"))


def ncu_install_dir(explicit: Path | None = None) -> Path:
    """The Nsight Compute installation folder: ``explicit``, else the one the ``ncu`` on PATH runs from."""
    from kcoral.profiling.ncu_summary import find_ncu, module_dirs

    if explicit is None:
        dirs = module_dirs(find_ncu())
        if not dirs:
            raise ImageBuildError(
                "no Nsight Compute installation found on this host: pass --ncu-dir "
                "(the folder holding ncu and extras/python/ncu_report.py)"
            )
        explicit = Path(dirs[0]).parent.parent
    if not (os.access(explicit / "ncu", os.X_OK) and (explicit / "extras" / "python" / "ncu_report.py").is_file()):
        raise ImageBuildError(
            f"{explicit} is not an Nsight Compute installation "
            "(expected an executable ncu and extras/python/ncu_report.py in it)"
        )
    return explicit


def _build_layer(
    client: docker.DockerClient,
    kind: str,
    opts: ProfilerBuild,
    force: bool,
    fill: Callable[[Path], None],
    smoke: list[str],
    log: Callable[[str], None],
) -> str:
    """Build IMAGE_REFS[kind] from images/<kind>/Dockerfile on ``opts.base``; ``fill`` adds the context."""
    ref = IMAGE_REFS[kind]
    old = image_id(client, ref)
    if old and not force:
        return old
    start = time.monotonic()
    ctx = Path(tempfile.mkdtemp(prefix=f"kcoral-{kind}-"))
    try:
        shutil.copy(HERE / kind / "Dockerfile", ctx / "Dockerfile")
        fill(ctx)
        new = docker_build(client, ctx, ref, buildargs={"BASE": opts.base}, nocache=force, log=log, prefix=f"{kind}: ")
    finally:
        shutil.rmtree(ctx, ignore_errors=True)
        with contextlib.suppress(docker.errors.DockerException):
            client.images.prune(filters={"dangling": True, "label": f"kcoral.stage={kind}-install"})
    log(f"{kind}: smoke test as uid 65534: {run_as_job(client, ref, smoke, ' '.join(smoke))[:200]}")
    remove_replaced(client, old, new)
    log(f"{kind}: built {ref} ({new[:19]}) on {opts.base} in {time.monotonic() - start:.1f}s")
    return new


def build_iket_image(
    client: docker.DockerClient,
    force: bool = False,
    log: Callable[[str], None] = print,
    opts: ProfilerBuild = ProfilerBuild(),
) -> str:
    """Make ``kcoral-iket:latest`` on ``opts.base`` if missing (or ``force``); return its image id."""

    def fill(ctx: Path) -> None:
        wheels = download_iket_wheels(ctx / "wheels", base_python(client, opts.base), log)
        log(f"iket: {len(wheels)} wheels, {sum(w.stat().st_size for w in wheels) / 2**20:.0f} MiB")

    return _build_layer(client, "iket", opts, force, fill, IKET_SMOKE, log)


def build_ncu_image(
    client: docker.DockerClient,
    force: bool = False,
    log: Callable[[str], None] = print,
    opts: ProfilerBuild = ProfilerBuild(),
) -> str:
    """Make ``kcoral-ncu:latest`` on ``opts.base`` if missing (or ``force``); return its image id."""

    def fill(ctx: Path) -> None:
        source = ncu_install_dir(opts.ncu_dir)
        log(f"ncu: copying {source} into the build context")
        shutil.copytree(source, ctx / "nsight-compute", symlinks=True)

    return _build_layer(client, "ncu", opts, force, fill, ["ncu", "--version"], log)
