"""The A/A calibration API (runner.calibrations) over real HTTP: POST /v1/calibrations queues the
server's own template evaluations as the caller's jobs and refuses what it cannot do, a client never
sets the calibration flag itself, and GET /v1/calibrations and /v1/health show the floors the store's
figures make."""

from __future__ import annotations

import hashlib
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from kcoral.runner.limits import Limits
from kcoral.runner.warmup import template_tar
from kcoral.tasks.calibration import DEFAULT_REQUESTS, MIN_REQUESTS, AaRun, CalibrationKey, method_sha256
from kcoral.tasks.cases import timing_method
from kcoral.tasks.registry import DEFAULT_TASKS_DIR, find_task
from tests.conftest import RunningServer

#: no timing asserted, nothing done to the engine that another file would see (scripts/test.sh)
pytestmark = pytest.mark.concurrent

TASK = "demo/softmax"
SLOT = "cpu0+cpu1@0:0:1"


def _error(r: Any, status: int, *words: str) -> None:
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"error", "message"}, body
    for word in words:
        assert word in body["message"], body


def test_a_client_cannot_set_the_calibration_flag(server: RunningServer) -> None:
    r = server.http.post("/v1/jobs", json={"kind": "eval", "task": TASK, "calibration": True})
    _error(r, 400, "calibration is set by the server alone", "kcoral calibrate")
    assert server.http.get("/v1/jobs").json() == []
    # false is what every evaluation is: said or not
    r = server.http.post("/v1/jobs", json={"kind": "eval", "task": TASK, "calibration": False})
    assert r.status_code == 201 and r.json()["spec"]["calibration"] is False, r.text
    server.http.post(f"/v1/jobs/{r.json()['id']}/cancel")


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"task": TASK, "requests": 0}, ["requests", "must be 1 to 20"]),
        ({"task": TASK, "requests": 21}, ["requests", "must be 1 to 20"]),
        ({"task": TASK, "requests": "3"}, ["requests", "whole number"]),
        ({"requests": 3}, ["task", "missing"]),
        ({"task": TASK, "request": 3}, ["request", "no such field"]),
        ([TASK], ["must be an object"]),
        ({"task": "no/such"}, ["no task 'no/such'", TASK]),
    ],
)
def test_a_bad_calibration_request_is_refused(server: RunningServer, body: Any, words: list[str]) -> None:
    _error(server.http.post("/v1/calibrations", json=body), 400, *words)
    assert server.http.get("/v1/jobs").json() == []


def test_a_task_without_a_template_cannot_be_calibrated(server_factory: Any, tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    shutil.copytree(DEFAULT_TASKS_DIR / "demo", tasks / "demo")
    (tasks / "demo" / "softmax" / "template.py").unlink()
    srv = server_factory(tasks_dirs=(tasks,))
    _error(srv.http.post("/v1/calibrations", json={"task": TASK}), 400, "task demo/softmax has no template")


def test_requests_past_the_cap_queue_none(server_factory: Any) -> None:
    srv = server_factory(limits=Limits(queued_per_token=3))
    _error(srv.http.post("/v1/calibrations", json={"task": TASK, "requests": 4}), 429, "4 A/A requests would pass it")
    assert srv.http.get("/v1/jobs").json() == []


def test_the_server_queues_its_template_as_the_callers_jobs(server: RunningServer) -> None:
    r = server.http.post("/v1/calibrations", json={"task": TASK, "requests": 2})
    assert r.status_code == 201, r.text
    answer = r.json()
    try:
        assert set(answer) == {"jobs", "slot_note"} and len(answer["jobs"]) == 2
        assert f"needs {MIN_REQUESTS} passed requests" in answer["slot_note"]
        template = find_task(DEFAULT_TASKS_DIR, TASK).root / "template.py"
        sha256 = hashlib.sha256(template_tar(template.read_bytes())).hexdigest()
        for job_id in answer["jobs"]:
            job = server.http.get(f"/v1/jobs/{job_id}").json()
            assert job["owner"] == "local" and job["input_sha256"] == sha256
            assert job["spec"]["kind"] == "eval" and job["spec"]["calibration"] is True
            assert job["spec"]["task"] == TASK and job["spec"]["timeout_s"] > 0
    finally:
        for job_id in answer["jobs"]:
            server.http.post(f"/v1/jobs/{job_id}/cancel")
    # none asked: the default number
    r = server.http.post("/v1/calibrations", json={"task": TASK})
    assert r.status_code == 201 and len(r.json()["jobs"]) == DEFAULT_REQUESTS, r.text
    for job_id in r.json()["jobs"]:
        server.http.post(f"/v1/jobs/{job_id}/cancel")


def _runs(job: str, at: float, speedup: float) -> list[AaRun]:
    return [AaRun("standard", job, at, speedup, 2.0, 2.0 / speedup)]


def test_the_floors_of_the_stored_figures_are_listed(server: RunningServer) -> None:
    assert server.http.get("/v1/calibrations").json() == []
    assert server.http.get("/v1/health").json()["calibration"] == []
    task = find_task(DEFAULT_TASKS_DIR, TASK)
    current, method = task.content_hash(), method_sha256(timing_method(Limits().eval_timing, task.manifest))
    store, now = server.services.store, time.time()
    for i, speedup in enumerate((0.93, 0.95, 0.94)):
        store.add_calibration(CalibrationKey(SLOT, TASK, current, method), _runs(f"job{i}", now - 60 * i, speedup))
    # one request: no floor yet
    store.add_calibration(CalibrationKey("cpu1@-", TASK, current, method), _runs("job9", now, 0.9))
    # an earlier version of the task, and the task measured by another timing method (an operator's limits)
    store.add_calibration(CalibrationKey(SLOT, TASK, "0" * 64, method), _runs("old", now, 0.9))
    store.add_calibration(CalibrationKey(SLOT, TASK, current, "1" * 64), _runs("other", now, 0.9))
    rows = server.http.get("/v1/calibrations", params={"task": TASK}).json()
    by_key = {(row["slot"], row["task_sha256"], row["method_sha256"]): row for row in rows}
    assert set(by_key) == {(SLOT, current, method), ("cpu1@-", current, method), (SLOT, "0" * 64, method)} | {
        (SLOT, current, "1" * 64)
    }
    assert [k for k, row in by_key.items() if not row["current"]] == [
        (SLOT, "0" * 64, method),
        (SLOT, current, "1" * 64),
    ]
    by_key = {(slot, sha): row for (slot, sha, m), row in by_key.items() if m == method}
    row = by_key[(SLOT, current)]
    assert row["current"] is True and row["requests"] == 3 and row["task"] == TASK
    floor = row["workloads"]["standard"]
    assert floor["requests"] == 3 and sorted(floor["jobs"]) == ["job0", "job1", "job2"]
    assert floor["position_ms"] > 0 and floor["half_width"] > 0 and floor["spread"] > 0
    assert by_key[("cpu1@-", current)]["workloads"] == {} and by_key[("cpu1@-", current)]["requests"] == 1
    assert by_key[(SLOT, "0" * 64)]["current"] is False
    assert server.http.get("/v1/calibrations", params={"task": "no/such"}).json() == []
    assert len(server.http.get("/v1/calibrations").json()) == 4
    health = server.http.get("/v1/health").json()["calibration"]
    assert sorted(h["slot"] for h in health) == ["cpu0+cpu1@0:0:1", "cpu1@-"] and all(h["current"] for h in health)
