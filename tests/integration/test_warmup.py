"""`kcoral serve --warm-up TASK`: the server evaluates the task's template of its own at its start
(runner.warmup), on the real engine, and /v1/health follows it."""

from __future__ import annotations

import shutil
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import docker
import pytest

from kcoral.protocol.errors import BadRequest
from kcoral.runner.auth import load_tokens
from kcoral.runner.settings import Settings
from kcoral.runner.warmup import WARM_UP_OWNER, template, template_tar
from kcoral.tasks.registry import DEFAULT_TASKS_DIR
from tests.conftest import RunningServer, free_port, quick_tasks, remove_containers, start_server

TASK = "demo/softmax"


def _warm_ups(srv: RunningServer) -> list[dict[str, Any]]:
    return srv.http.get("/v1/health").json()["warm_up"]


def _finished(srv: RunningServer, timeout: float = 240) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        (warm,) = _warm_ups(srv)
        if warm["state"] == "finished":
            return warm
        time.sleep(0.1)
    raise AssertionError(f"the warm-up did not finish: {_warm_ups(srv)}")


def test_the_template_is_evaluated_at_the_start(
    tmp_path: Path, docker_client: docker.DockerClient, job_image: str
) -> None:
    # the task timed briefly (tests.conftest.quick_tasks): that the warm-up is made, and how, is asserted
    tasks = quick_tasks(tmp_path / "tasks")
    settings = Settings(
        data_dir=tmp_path / "data", port=free_port(), image=job_image, gpus="none", warm_up=(TASK,), tasks_dirs=(tasks,)
    )
    srv = start_server(settings)
    try:
        (warm,) = _warm_ups(srv)
        assert warm["task"] == TASK and warm["state"] in ("queued", "running")
        done = _finished(srv)
        # the template is the baseline's approach: every check passes (a noisy host may leave it unscored)
        assert done["verdict"] in ("ok", "inconclusive"), done
        job = srv.services.store.get(done["job"])
        assert job.owner == WARM_UP_OWNER and job.spec.kind == "eval"
        judge = (settings.data_dir / "jobs" / done["job"] / "eval" / "judge.log").read_text()
        assert "start took: " in judge and "warm-up" in judge
        # the server's own job is not a user's: the API shows it to no token
        assert srv.http.get(f"/v1/jobs/{done['job']}").status_code == 404
    finally:
        srv.stop()
        remove_containers(docker_client, settings.instance)


def test_a_warm_up_still_queued_is_not_made_again(
    tmp_path: Path, docker_client: docker.DockerClient, job_image: str
) -> None:
    """No slot to run on (cpu_slots=0): the warm-up stays queued across a restart, and the restart
    lists that job instead of queueing another."""
    settings = Settings(
        data_dir=tmp_path / "data", port=free_port(), image=job_image, gpus="none", cpu_slots=0, warm_up=(TASK,)
    )
    srv = start_server(settings)
    try:
        (first,) = _warm_ups(srv)
        assert first["state"] == "queued"
    finally:
        srv.stop()
    srv = start_server(replace(settings, port=free_port()))
    try:
        assert [w["job"] for w in _warm_ups(srv)] == [first["job"]]
        assert len(srv.services.store.list(owner=WARM_UP_OWNER)) == 1
    finally:
        srv.stop()
        remove_containers(docker_client, settings.instance)


def test_a_task_that_cannot_be_warmed_up_is_named(tmp_path: Path) -> None:
    with pytest.raises(BadRequest, match="no task 'no/such'"):
        template(DEFAULT_TASKS_DIR, "no/such")
    shutil.copytree(DEFAULT_TASKS_DIR / "demo", tmp_path / "demo")
    (tmp_path / "demo" / "softmax" / "template.py").unlink()
    with pytest.raises(BadRequest, match="task demo/softmax has no template to warm up with"):
        template(tmp_path, TASK)
    assert template(DEFAULT_TASKS_DIR, TASK) == template_tar(
        (DEFAULT_TASKS_DIR / "demo" / "softmax" / "template.py").read_bytes()
    )


def test_no_token_may_take_the_servers_own_name(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text(f"{WARM_UP_OWNER} {'x' * 16}\n")
    with pytest.raises(BadRequest, match="the server's own"):
        load_tokens(path)


def test_calibrate_queues_a_a_requests_after_the_warm_up_once(
    tmp_path: Path, docker_client: docker.DockerClient, job_image: str
) -> None:
    """``--calibrate 2``: the warm-up (itself an A/A request) and two more of the template, as the
    server's jobs; still queued at a restart (no slot to run on), none is made again."""
    settings = Settings(
        data_dir=tmp_path / "data",
        port=free_port(),
        image=job_image,
        gpus="none",
        cpu_slots=0,
        warm_up=(TASK,),
        calibrate=2,
    )
    srv = start_server(settings)
    try:
        (warm,) = _warm_ups(srv)
        assert warm["state"] == "queued" and len(warm["calibrations"]) == 2
        jobs = [srv.services.store.get(j) for j in (warm["job"], *warm["calibrations"])]
        assert all(j.owner == WARM_UP_OWNER and j.spec.calibration and j.state == "queued" for j in jobs)
        assert len({j.input_sha256 for j in jobs}) == 1
    finally:
        srv.stop()
    srv = start_server(replace(settings, port=free_port()))
    try:
        (again,) = _warm_ups(srv)
        assert again["job"] == warm["job"] and again["calibrations"] == warm["calibrations"]
        assert len(srv.services.store.list(owner=WARM_UP_OWNER)) == 3
    finally:
        srv.stop()
        remove_containers(docker_client, settings.instance)
