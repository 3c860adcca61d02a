"""Test files that need torch (which the test environment does not install) run here, with pytest,
inside the CPU job image, which has it: as the job user, without network, on a read-only copy of the
repository (kcoral in it as installed: tests/package_copy.py), with the host's own pure-Python pytest
mounted beside it. A failure or a skip there fails this test."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import docker
import pytest

from tests.package_copy import package_copy

#: tests run inside the job image: no timing asserted (scripts/test.sh)
pytestmark = pytest.mark.concurrent

REPO = Path(__file__).resolve().parents[2]
#: they import torch (pytest.importorskip here, so they are skipped outside the image)
TORCH_TESTS = [
    "tests/tasks/test_checks.py",
    "tests/tasks/test_worker_gate.py",
    "tests/tasks/test_null_worker.py",
    "tests/tasks/test_pack_draws_torch.py",
    "tests/tasks/test_pack_inspect_torch.py",
    "tests/tasks/test_pack_values_torch.py",
    "tests/tasks/test_side_release_torch.py",
    "tests/tasks/test_spots_torch.py",
    "tests/tasks/test_too_slow_torch.py",
]
#: pytest and what it imports, all pure Python: each mounted from the host's environment
PYTEST_PARTS = ["pytest", "_pytest", "py", "pluggy", "iniconfig", "packaging", "pygments", "pytest_timeout"]


def _source(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.origin is not None, name
    origin = Path(spec.origin)
    return origin.parent if origin.name == "__init__.py" else origin


def test_the_torch_tests_pass_in_the_job_image(
    docker_client: docker.DockerClient, job_image: str, tmp_path: Path
) -> None:
    package = package_copy(tmp_path)
    volumes = {str(REPO): {"bind": "/w", "mode": "ro"}, str(package): {"bind": "/w/kcoral", "mode": "ro"}}
    for name in PYTEST_PARTS:
        src = _source(name)
        volumes[str(src)] = {"bind": f"/deps/{src.name}", "mode": "ro"}
    container = docker_client.containers.run(
        job_image,
        ["python3", "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "pytest_timeout", "--noconftest",
         *TORCH_TESTS],
        detach=True,
        user="65534:65534",
        working_dir="/w",
        volumes=volumes,
        environment={"HOME": "/tmp", "PYTHONPATH": "/deps:/w", "PYTHONDONTWRITEBYTECODE": "1"},
        tmpfs={"/tmp": "size=256m"},
        network_mode="none",
    )  # fmt: skip
    try:
        status = container.wait(timeout=300)["StatusCode"]
        out = container.logs().decode()
    finally:
        container.remove(force=True)
    assert status == 0 and " passed" in out and "skipped" not in out, out[-3000:]
