"""``kcoral sanitizer`` on a real GPU (the reference H200 host: bash scripts/gpu-host-tests.sh), each tool on
a kernel of examples/sanitizer through the real server: memcheck must report a Triton kernel's out-of-bounds
read, racecheck a shared-memory race, synccheck a bad warp barrier, initcheck a read of memory nobody wrote;
and each tool nothing in the same kernel fixed.

With $KCORAL_SANITIZER_REPORTS=DIR the reports are kept there as h200-TOOL-{broken,fixed}.{txt,xml}:
the real reports behind tests/fixtures/sanitizer (see its README).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from kcoral.profiling.capabilities import find_sanitizer
from kcoral.profiling.sanitizer_findings import ERRORS_EXIT
from kcoral.profiling.sanitizer_report import load_pair, summarize
from kcoral.runner.gpus import Nvml
from kcoral.runner.settings import DEFAULT_TOOLCHAIN_MOUNTS

pytestmark = pytest.mark.gpu

PYTHON = os.environ.get("KCORAL_TEST_PYTHON") or shutil.which("python3") or "python3"
PATH = f"{os.path.dirname(PYTHON)}:/usr/local/cuda/bin:/usr/local/bin:/usr/bin:/bin"

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "sanitizer"
FILES = {p.name: p.read_text() for p in EXAMPLES.glob("*.py")}

#: tool, the command's arguments (the broken kernel's, the fixed one's), the kernel and kind of error it must name
CASES = [
    ("memcheck", ["oob.py"], ("oob", "masked"), "copy_kernel", "invalid __global__ read"),
    ("racecheck", ["race.py", "shift_left"], ("broken", "fixed"), "shift_left", "race"),
    ("synccheck", ["race.py", "bad_syncwarp"], ("broken", "fixed"), "bad_syncwarp", "barrier"),
    ("initcheck", ["uninit.py"], ("broken", "fixed"), "add_one", "uninitialized __global__ memory read"),
]


@pytest.fixture
def gpu_server(server_factory: Any) -> Any:
    if not Nvml().list():
        pytest.skip("no NVIDIA GPU here")
    if find_sanitizer() is None:
        pytest.skip("no compute-sanitizer on this host")
    return server_factory(
        image="kcoral-toolchain:latest",
        toolchain_mounts=DEFAULT_TOOLCHAIN_MOUNTS,
        gpus="auto",
        python=PYTHON,
        # Triton finds libcuda through ldconfig's cache, which holds no driver libraries where the host's are
        # mounted (the H200: /usr/local/nvidia/lib64, as scripts/gpu-host-prepare.sh's job options say);
        # without it the Triton script failed at its first launch and memcheck saw no kernel
        job_env={"PATH": PATH, "TRITON_LIBCUDA_PATH": "/usr/local/nvidia/lib64"},
    )


def _reports(server: Any, job: dict[str, Any], dest: Path, tag: str) -> dict[str, Any]:
    paths = {}
    for name in ("sanitizer.txt", "sanitizer.xml"):
        r = server.http.get(f"/v1/jobs/{job['id']}/outputs/{name}")
        assert r.status_code == 200, (name, r.text)
        paths[name] = dest / f"h200-{tag}.{name.rsplit('.', 1)[1]}"
        paths[name].write_bytes(r.content)
    keep = os.environ.get("KCORAL_SANITIZER_REPORTS")
    if keep:
        for path in paths.values():
            shutil.copy(path, Path(keep) / path.name)
    return summarize(load_pair(paths["sanitizer.xml"], paths["sanitizer.txt"]))


@pytest.mark.parametrize(("tool", "argv", "how", "kernel", "kind"), CASES, ids=[c[0] for c in CASES])
def test_each_tool_reports_its_bug_and_not_the_fix(
    gpu_server: Any, tmp_path: Path, tool: str, argv: list[str], how: tuple[str, str], kernel: str, kind: str
) -> None:
    common = {"kind": "sanitizer", "gpus": 1, "timeout_s": 600}
    job, log = gpu_server.run(FILES, [f"--tool={tool}"], 660, command=[PYTHON, *argv, how[0]], **common)
    assert job["exit_code"] == ERRORS_EXIT, (job, log)
    doc = _reports(gpu_server, job, tmp_path, f"{tool}-broken")
    assert doc["errors"] >= 1, doc
    found = [g for g in doc["groups"] if kernel in (g["kernel"] or "") and kind in g["kind"].lower()]
    assert found, doc
    if tool == "memcheck":  # the first source location: the load's line of the Triton source
        assert found[0]["location"] and "oob.py" in found[0]["location"], doc

    job, log = gpu_server.run(FILES, [f"--tool={tool}"], 660, command=[PYTHON, *argv, how[1]], **common)
    assert job["verdict"] == "ok" and job["exit_code"] == 0, (job, log)
    assert _reports(gpu_server, job, tmp_path, f"{tool}-fixed")["errors"] == 0
