"""The KDA task's CPU checks (tests/tasks/test_kda_cpu.py: inputs, the fp64 oracle, the holdout, the
tolerances) need torch, which the test environment does not install: they run here inside the CPU
job image, which has it, as the job user on a read-only copy of the repository (kcoral in it as
installed: tests/package_copy.py). Every check must print PASS; one FAIL fails this test."""

from __future__ import annotations

from pathlib import Path

import docker
import pytest

from tests.package_copy import package_copy

#: tests run inside the job image: no timing asserted (scripts/test.sh)
pytestmark = pytest.mark.concurrent

REPO = Path(__file__).resolve().parents[2]


def test_kda_cpu_checks_pass_in_the_job_image(
    docker_client: docker.DockerClient, job_image: str, tmp_path: Path
) -> None:
    package = package_copy(tmp_path)
    out = docker_client.containers.run(
        job_image,
        ["python3", "tests/tasks/test_kda_cpu.py"],
        remove=True,
        user="65534:65534",
        working_dir="/w",
        volumes={str(REPO): {"bind": "/w", "mode": "ro"}, str(package): {"bind": "/w/kcoral", "mode": "ro"}},
        environment={"HOME": "/tmp"},
        tmpfs={"/tmp": "size=256m"},
        network_mode="none",
        stdout=True,
        stderr=True,
    ).decode()
    lines = [line for line in out.splitlines() if line.startswith(("PASS", "FAIL"))]
    tests = [
        line for line in (REPO / "tests/tasks/test_kda_cpu.py").read_text().splitlines() if line.startswith("def test_")
    ]
    assert len(lines) == len(tests) and all(line.startswith("PASS") for line in lines), out[-3000:]
