"""The server's life cycle as an operator meets it, on a real engine and a real process: SIGTERM
with jobs running and queued, a second server on the same data dir. Each asserts every job's final
state and reason, no orphan container, and the server answering (or refusing clearly)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import docker
import httpx
import pytest

from kcoral.runner.settings import Settings
from tests.conftest import job_containers, make_tar, standbys, wait_for_standby
from tests.serverproc import ROOT, ServerProcess, serving

#: a server of its own, the engine's faults behind its own proxy (tests.faults.engine_proxy), its containers
#: found by its instance label: nothing another file sees; no timing asserted (scripts/test.sh)
pytestmark = pytest.mark.concurrent


def submit(http: httpx.Client, script: str) -> str:
    r = http.post("/v1/jobs", json={"argv": ["m.py"]})
    assert r.status_code == 201, r.text
    job_id = str(r.json()["id"])
    assert http.put(f"/v1/jobs/{job_id}/input", content=make_tar({"m.py": script})).status_code == 200
    return job_id


def wait_for(http: httpx.Client, job_id: str, state: str, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while (job := http.get(f"/v1/jobs/{job_id}").json())["state"] != state:
        assert time.monotonic() < deadline, f"job {job_id} is {job['state']}, not {state}"
        time.sleep(0.05)
    return dict(job)


def containers(engine: docker.DockerClient, job_id: str) -> list[Any]:
    return job_containers(engine, job_id)


#: how a server that stopped on SIGTERM exits (uvicorn re-raises the signal once it has shut down)
STOPPED = (0, -signal.SIGTERM)
LONG = "import time\nprint('working', flush=True)\ntime.sleep(300)\n"
SHORT = "import time\ntime.sleep(1.5)\nprint('done', flush=True)\n"


def test_sigterm_interrupts_a_long_job_after_the_grace_keeps_the_queue_and_removes_the_container(
    tmp_path: Path, job_image: str, docker_client: docker.DockerClient
) -> None:
    server = ServerProcess(tmp_path / "data", job_image, 1, None, "--shutdown-grace", "2")
    with serving(server) as http:
        running = submit(http, LONG)
        queued = submit(http, "print('ran after the restart')\n")
        wait_for(http, running, "running")
        deadline = time.monotonic() + 30
        while not containers(docker_client, running):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        with httpx.stream("GET", f"{server.url}/v1/jobs/{running}/log", params={"follow": True}, timeout=60) as log:
            lines = log.iter_lines()
            assert next(lines) == "working"
            began = time.monotonic()
            server.signal(signal.SIGTERM)
            # draining: still listening, new work is told to come back, existing jobs are still served
            time.sleep(0.3)
            refused = http.post("/v1/jobs", json={"argv": ["x.py"]})
            assert refused.status_code == 503 and refused.json()["error"] == "shutting_down", refused.text
            assert int(refused.headers["Retry-After"]) > 0
            assert http.get(f"/v1/jobs/{running}").json()["state"] == "running"
            assert list(lines) == []  # the follower's stream ends with the job
        assert server.proc is not None and server.proc.wait(30) in STOPPED
        took = time.monotonic() - began
        assert 2 <= took < 20, f"the server took {took:.1f} s to stop with a 2 s grace"
        assert containers(docker_client, running) == []

        server.start()
        job = http.get(f"/v1/jobs/{running}").json()
        assert (job["state"], job["verdict"]) == ("finished", "interrupted")
        assert "the server shut down while this job ran" in job["reason"]
        done = wait_for(http, queued, "finished")
        assert done["verdict"] == "ok" and http.get(f"/v1/jobs/{queued}/log").text == "ran after the restart\n"


def test_sigterm_lets_a_job_that_ends_within_the_grace_finish(
    tmp_path: Path, job_image: str, docker_client: docker.DockerClient
) -> None:
    server = ServerProcess(tmp_path / "data", job_image, 1, None, "--shutdown-grace", "30")
    with serving(server) as http:
        job_id = submit(http, SHORT)
        wait_for(http, job_id, "running")
        server.signal(signal.SIGTERM)
        assert server.proc is not None and server.proc.wait(40) in STOPPED
        server.start()
        job = http.get(f"/v1/jobs/{job_id}").json()
        assert (job["verdict"], job["exit_code"]) == ("ok", 0) and http.get(f"/v1/jobs/{job_id}/log").text == "done\n"
        assert containers(docker_client, job_id) == []


def test_a_second_server_on_the_same_data_dir_refuses_to_start_and_the_first_keeps_its_job(
    tmp_path: Path, job_image: str, docker_client: docker.DockerClient
) -> None:
    first = ServerProcess(tmp_path / "data", job_image)
    with serving(first) as http:
        job_id = submit(http, SHORT)
        wait_for(http, job_id, "running")
        second = subprocess.run(
            [sys.executable, "-m", "kcoral", "serve", "--port", str(first.port + 1), "--data-dir",
             str(tmp_path / "data"), "--image", job_image, "--gpus", "none"],
            cwd=ROOT, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert second.returncode == 2, second.stderr
        assert "another kcoral server (pid " in second.stderr and "is using the data dir" in second.stderr
        assert "Traceback" not in second.stderr
        job = wait_for(http, job_id, "finished")
        assert (job["verdict"], job["exit_code"]) == ("ok", 0)


def test_a_container_killed_from_outside_is_not_called_the_memory_limit(
    server: Any, docker_client: docker.DockerClient
) -> None:
    job_id = server.submit({"m.py": LONG}, ["m.py"])["id"]
    deadline = time.monotonic() + 30
    while not (found := [c for c in containers(docker_client, job_id) if c.status == "running"]):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    found[0].kill()
    job = server.wait(job_id)
    assert (job["verdict"], job["exit_code"]) == ("exit", 137)
    assert job["reason"] == (
        "killed by SIGKILL (exit 137), not at the memory limit: by something outside the job, or itself"
    )


def test_a_server_stopped_by_sigterm_leaves_no_standby_container(
    tmp_path: Path, job_image: str, docker_client: docker.DockerClient
) -> None:
    """uvicorn's shutdown stops the scheduler from two threads; the process must not end while one of
    them still removes the standbys (seen: one left per `bash scripts/demo.sh`)."""
    server = ServerProcess(tmp_path / "data", job_image, 2)
    instance = Settings(data_dir=tmp_path / "data").instance
    with serving(server) as http:
        for slot in ("cpu0", "cpu1"):  # the standbys made at the start
            wait_for_standby(docker_client, instance, slot)
        job = submit(http, "print('x')\n")
        wait_for(http, job, "finished")
        server.signal(signal.SIGTERM)  # while cpu0's next standby is still starting
        assert server.proc is not None and server.proc.wait(40) in STOPPED
        assert standbys(docker_client, instance) == []
