"""The engine gone at start and lost mid-job, through tests.faults.engine_proxy (the shared engine is
never touched). Wanted: /v1/health says so, queued jobs wait instead of failing, the server reconnects
by itself, and a container left behind while the engine was gone is removed once it is back."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import docker

from tests.faults.engine_proxy import EngineProxy
from tests.faults.test_lifecycle import LONG, containers, submit, wait_for
from tests.serverproc import ServerProcess, serving


def test_an_engine_down_at_start_holds_the_queue_until_it_answers(tmp_path: Path, job_image: str) -> None:
    proxy = EngineProxy(tmp_path / "docker.sock")
    server = ServerProcess(tmp_path / "data", job_image, env={"DOCKER_HOST": proxy.docker_host})
    try:
        with serving(server) as http:
            health = http.get("/v1/health").json()
            assert health["docker"]["ok"] is False and "cannot reach the Docker engine" in health["docker"]["error"]
            job_id = submit(http, "print('ran once the engine was back')\n")
            time.sleep(2)
            job = http.get(f"/v1/jobs/{job_id}").json()
            assert (job["state"], job["queue_position"]) == ("queued", 1), job
            proxy.start()
            done = wait_for(http, job_id, "finished", timeout=60)
            assert (
                done["verdict"] == "ok" and http.get(f"/v1/jobs/{job_id}/log").text == "ran once the engine was back\n"
            )
            assert http.get("/v1/health").json()["docker"]["ok"] is True
    finally:
        proxy.stop()


def test_a_container_left_while_the_engine_was_lost_is_removed_when_it_returns(
    tmp_path: Path, job_image: str, docker_client: docker.DockerClient
) -> None:
    proxy = EngineProxy(tmp_path / "docker.sock").start()
    server = ServerProcess(tmp_path / "data", job_image, env={"DOCKER_HOST": proxy.docker_host})
    try:
        with serving(server) as http:
            job_id = submit(http, LONG)
            wait_for(http, job_id, "running")
            deadline = time.monotonic() + 30
            while not containers(docker_client, job_id):
                assert time.monotonic() < deadline
                time.sleep(0.05)
            proxy.stop()
            job: dict[str, Any] = wait_for(http, job_id, "finished", timeout=60)
            assert job["verdict"] == "infrastructure_error" and "Docker" in job["reason"], job
            assert containers(docker_client, job_id), "the engine was gone: the container is still there"
            proxy.start()
            deadline = time.monotonic() + 60
            while containers(docker_client, job_id):
                assert time.monotonic() < deadline, "the orphan was not removed once the engine answered"
                time.sleep(0.2)
            again = submit(http, "print('after the outage')\n")
            assert wait_for(http, again, "finished")["verdict"] == "ok"
    finally:
        proxy.stop()
        for c in containers(docker_client, job_id):
            c.remove(force=True)
