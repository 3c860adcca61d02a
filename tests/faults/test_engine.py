"""The engine gone at start and lost mid-job, through tests.faults.engine_proxy (the shared engine is
never touched). Wanted: /v1/health says so, queued jobs wait instead of failing, the server reconnects
by itself, and a container left behind while the engine was gone is removed once it is back (a
standby whose start was cut among them, and none the server still holds); a broken log stream ends
the job with an infrastructure error, never an uncaught exception."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import docker
import pytest

from kcoral.runner.sandbox import LABEL_INSTANCE
from kcoral.runner.settings import Settings
from kcoral.runner.standby import LABEL_STANDBY
from tests.conftest import wait_for_standby
from tests.faults.engine_proxy import EngineProxy
from tests.faults.test_lifecycle import LONG, containers, submit, wait_for
from tests.serverproc import ServerProcess, serving

#: a server of its own, the engine's faults behind its own proxy (tests.faults.engine_proxy), its containers
#: found by its instance label: nothing another file sees; no timing asserted (scripts/test.sh)
pytestmark = pytest.mark.concurrent


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
            _until_removed(docker_client, job_id, "the orphan was not removed once the engine answered")
            again = submit(http, "print('after the outage')\n")
            assert wait_for(http, again, "finished")["verdict"] == "ok"
    finally:
        proxy.stop()
        for c in containers(docker_client, job_id):
            c.remove(force=True)


def _standbys(engine: docker.DockerClient, data_dir: Path) -> list[Any]:
    """Every standby container (runner.standby) of the server on ``data_dir``, started or not."""
    instance = Settings(data_dir=data_dir).instance
    labels = [f"{LABEL_INSTANCE}={instance}", LABEL_STANDBY]
    return engine.containers.list(all=True, sparse=True, filters={"label": labels})  # sparse: no inspect of each


def test_a_standby_whose_start_was_cut_is_removed_once_the_engine_is_back(
    tmp_path: Path, job_image: str, docker_client: docker.DockerClient
) -> None:
    """The engine goes between the create and the start of the standby made at the server's start:
    the container is left created (its removal fails too), and must go once the engine answers."""
    proxy = EngineProxy(tmp_path / "docker.sock").cut_at(rb"POST /[^ ]*/containers/[0-9a-f]+/start ").start()
    server = ServerProcess(
        tmp_path / "data", job_image, env={"DOCKER_HOST": proxy.docker_host}, log=tmp_path / "server.log"
    )
    try:
        with serving(server) as http:
            assert proxy.cut.wait(60), "the standby's start never came"
            (cut,) = _standbys(docker_client, tmp_path / "data")
            assert cut.attrs["State"] == "created"
            deadline = time.monotonic() + 30  # the server gives up on it (and fails to remove it)
            while "no standby container for cpu0" not in (tmp_path / "server.log").read_text():
                assert time.monotonic() < deadline, "the server never gave up on the standby"
                time.sleep(0.05)
            proxy.start()
            job_id = submit(http, "print('after the outage')\n")
            assert wait_for(http, job_id, "finished")["verdict"] == "ok"
            deadline = time.monotonic() + 60
            while cut.id in {c.id for c in _standbys(docker_client, tmp_path / "data")}:
                assert time.monotonic() < deadline, "the standby whose start was cut was never removed"
                time.sleep(0.2)
    finally:
        proxy.stop()


def test_an_engine_lost_mid_job_ends_it_clearly_and_the_tidy_keeps_the_ready_standbys(
    tmp_path: Path, job_image: str, docker_client: docker.DockerClient
) -> None:
    """The engine goes while a job runs on cpu0 and cpu1's standby waits: the log thread's broken
    stream is the job's infrastructure error (no traceback in the server's log); once the engine is
    back the job's container is removed, and cpu1's standby, which the pool still holds, is not."""
    proxy = EngineProxy(tmp_path / "docker.sock").start()
    log = tmp_path / "server.log"
    server = ServerProcess(tmp_path / "data", job_image, 2, env={"DOCKER_HOST": proxy.docker_host}, log=log)
    instance = Settings(data_dir=tmp_path / "data").instance
    try:
        with serving(server) as http:
            ready = wait_for_standby(docker_client, instance, "cpu1")
            wait_for_standby(docker_client, instance, "cpu0")
            job_id = submit(http, LONG)
            wait_for(http, job_id, "running")
            deadline = time.monotonic() + 30
            while http.get(f"/v1/jobs/{job_id}/log").text != "working\n":  # its log stream is open
                assert time.monotonic() < deadline
                time.sleep(0.05)
            proxy.stop()
            job: dict[str, Any] = wait_for(http, job_id, "finished", timeout=60)
            assert job["verdict"] == "infrastructure_error", job
            assert job["reason"].startswith("the connection to the Docker engine broke while the job ran"), job
            assert containers(docker_client, job_id), "the engine was gone: the container is still there"
            proxy.start()
            _until_removed(docker_client, job_id, "the job's container was not removed once the engine answered")
            assert ready in {c.id for c in _standbys(docker_client, tmp_path / "data")}, "the tidy removed it"
            again = submit(http, "print('after the outage')\n")
            assert wait_for(http, again, "finished")["verdict"] == "ok"
        text = log.read_text()
        assert "Traceback" not in text and "Exception in thread" not in text, text
    finally:
        proxy.stop()
        for c in containers(docker_client, job_id):
            c.remove(force=True)


def _until_removed(docker_client: Any, job_id: str, message: str, timeout: float = 60) -> None:
    """Wait until the job's containers are gone (the tidy's work once the engine answers again)."""
    deadline = time.monotonic() + timeout
    while containers(docker_client, job_id):
        assert time.monotonic() < deadline, message
        time.sleep(0.2)
