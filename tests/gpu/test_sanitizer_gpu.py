"""``kcoral sanitizer`` on a real GPU (the reference H200 host: bash scripts/gpu-host-tests.sh): memcheck
must report a Triton kernel's deliberate out-of-bounds read, and nothing in the same kernel with its mask.

With $KCORAL_SANITIZER_REPORTS=DIR the reports are kept there as h200-memcheck-{oob,masked}.{txt,xml}:
the real reports that replace tests/fixtures/sanitizer's hand-written ones (see its README).
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

OOB = (Path(__file__).resolve().parents[2] / "examples" / "sanitizer_oob" / "oob.py").read_text()


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
        paths[name] = dest / f"h200-memcheck-{tag}.{name.rsplit('.', 1)[1]}"
        paths[name].write_bytes(r.content)
    keep = os.environ.get("KCORAL_SANITIZER_REPORTS")
    if keep:
        for path in paths.values():
            shutil.copy(path, Path(keep) / path.name)
    return summarize(load_pair(paths["sanitizer.xml"], paths["sanitizer.txt"]))


def test_memcheck_reports_the_out_of_bounds_read_and_not_the_masked_one(gpu_server: Any, tmp_path: Path) -> None:
    common = {"kind": "sanitizer", "gpus": 1, "timeout_s": 600}
    job, log = gpu_server.run({"oob.py": OOB}, ["--tool=memcheck"], 660, command=[PYTHON, "oob.py", "oob"], **common)
    assert job["exit_code"] == ERRORS_EXIT, (job, log)
    doc = _reports(gpu_server, job, tmp_path, "oob")
    assert doc["errors"] >= 1, doc
    reads = [g for g in doc["groups"] if "copy_kernel" in (g["kernel"] or "") and "read" in g["kind"].lower()]
    assert reads and reads[0]["location"] and "oob.py" in reads[0]["location"], doc

    job, log = gpu_server.run({"oob.py": OOB}, ["--tool=memcheck"], 660, command=[PYTHON, "oob.py", "masked"], **common)
    assert job["verdict"] == "ok" and "copied True" in log, (job, log)
    assert _reports(gpu_server, job, tmp_path, "masked")["errors"] == 0
