"""GPU jobs on a real NVIDIA host (run there, with every other gpu test: bash scripts/gpu-host-tests.sh).

The host is the reference H200 machine: no NVIDIA container toolkit, so GPUs reach the container
as device nodes, and CUDA/PyTorch come from the host's directories mounted read-only.
"""

from __future__ import annotations

import os
import shutil

import pytest

from kcoral.runner.gpus import Nvml
from kcoral.runner.settings import DEFAULT_TOOLCHAIN_MOUNTS

pytestmark = pytest.mark.gpu

PYTHON = os.environ.get("KCORAL_TEST_PYTHON") or shutil.which("python3") or "python3"
PATH = f"{os.path.dirname(PYTHON)}:/usr/local/cuda/bin:/usr/local/bin:/usr/bin:/bin"


@pytest.fixture
def gpu_server(server_factory):
    if not Nvml().list():
        pytest.skip("no NVIDIA GPU here")
    return server_factory(
        image="kcoral-toolchain:latest",
        toolchain_mounts=DEFAULT_TOOLCHAIN_MOUNTS,
        gpus="auto",
        python=PYTHON,
        job_env={"PATH": PATH},
    )


SEES_ONE_GPU = """
import torch
print("count", torch.cuda.device_count())
p = torch.cuda.get_device_properties(0)
print("name", p.name)
print("uuid", "GPU-" + str(p.uuid))
a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
print("matmul", float((a @ a).float().abs().mean()) > 0)
"""


def test_job_sees_exactly_its_gpu_and_leaves_it_clean(gpu_server):
    job, log = gpu_server.run({"m.py": SEES_ONE_GPU}, ["m.py"], gpus=1, timeout_s=300)
    assert job["verdict"] == "ok", (job, log)
    assert "count 1" in log and "name NVIDIA H" in log and "matmul True" in log
    assert f"uuid {job['gpus'][0]['uuid']}" in log
    health = gpu_server.http.get("/v1/health").json()
    assert health["gpu_mode"] == "devices"
    assert health["leases"]["drained"] == {}
    usage = gpu_server.services.nvml.usage(job["gpus"][0]["index"])
    assert usage is not None and usage.processes == ()


def test_orphan_holding_a_cuda_context_is_gone_after_the_job(gpu_server):
    script = """
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        import torch
        x = torch.empty(1 << 30, device="cuda")
        time.sleep(600)
    os._exit(0)
print("parent exits", flush=True)
time.sleep(8)
"""
    job, _ = gpu_server.run({"m.py": script}, ["m.py"], gpus=1, timeout_s=120)
    assert job["verdict"] == "ok", job
    usage = gpu_server.services.nvml.usage(job["gpus"][0]["index"])
    assert usage is not None and usage.processes == ()
    assert gpu_server.http.get("/v1/health").json()["leases"]["drained"] == {}


def test_clock_locking_is_refused(gpu_server):
    job, log = gpu_server.run(
        {"m.py": "import subprocess\nr = subprocess.run(['nvidia-smi', '-lgc', '1000'])\nprint('rc', r.returncode)"},
        ["m.py"],
        gpus=1,
    )
    assert "rc 0" not in log, log
