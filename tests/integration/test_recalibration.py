"""The server measures a calibrated task again while it is idle (runner.recalibration), so that a slot's
noise floor comes to span its time: one A/A request of the task whose latest is oldest, once that is
``calibration_every_s`` old and nothing has been queued or running for the quiet spell, until its floor's
requests lie in ``calibration_keep`` windows of time; never a task measured with other content or
another timing method. On a real server's store and queue."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import pytest

from kcoral.protocol.models import EvalSpec, JobState
from kcoral.runner.jobkinds import spec_as
from kcoral.runner.limits import Limits
from kcoral.runner.recalibration import RECALIBRATION_OWNER, Recalibrator, due, windows
from kcoral.tasks.calibration import AaRun, CalibrationKey, CalibrationPolicy, method_sha256
from kcoral.tasks.cases import timing_method
from kcoral.tasks.registry import DEFAULT_TASKS_DIR, find_task

#: no timing asserted, nothing done to the engine that another file would see (scripts/test.sh)
pytestmark = pytest.mark.concurrent

TASK = "demo/softmax"
SLOT = "cpu0+cpu1@0:0:1"


POLICY = CalibrationPolicy(keep=3, every_s=900.0, max_age_s=10_000.0)


def test_the_task_measured_longest_ago_is_due_once_it_is_old_enough() -> None:
    requests = {"a/x": [100.0, 90.0], "b/y": [50.0]}
    assert due(requests, now=1000.0, policy=POLICY) == "b/y"
    assert due(requests, now=949.0, policy=POLICY) is None
    assert due({"a/x": [100.0], "b/y": [100.0]}, now=1000.0, policy=POLICY) == "a/x"  # a tie: by name
    assert due(requests, now=1e12, policy=replace(POLICY, every_s=0.0)) is None  # 0: never
    assert due({}, now=1e12, policy=POLICY) is None


def test_a_floor_whose_requests_are_spaced_apart_asks_for_no_more_until_one_ages_out() -> None:
    burst = [0.0, 10.0, 20.0]  # one window
    assert windows(burst, 900.0) == 1 and windows([0.0, 900.0, 905.0, 2000.0], 900.0) == 3
    assert due({"a/x": burst}, now=1000.0, policy=POLICY) == "a/x"
    spaced = [0.0, 1000.0, 2000.0]  # keep (3) windows
    assert due({"a/x": spaced}, now=5000.0, policy=POLICY) is None
    # only the latest keep count: a burst after spaced requests is due again
    assert due({"a/x": [*spaced, 2010.0, 2020.0]}, now=5000.0, policy=POLICY) == "a/x"
    # the oldest past max_age_s: the floor rests on two windows, and one more is due
    assert due({"a/x": spaced}, now=10_500.0, policy=POLICY) == "a/x"


def _run(job: str, at: float) -> list[AaRun]:
    return [AaRun("standard", job, at, 1.0, 2.0, 2.0, 0.98, 1.02)]


def test_an_idle_server_measures_a_calibrated_task_again(server_factory: Any) -> None:
    srv = server_factory(limits=Limits(calibration=CalibrationPolicy(every_s=3600.0)))
    svc = srv.services
    task = find_task(DEFAULT_TASKS_DIR, TASK)
    method = method_sha256(timing_method(Limits().eval_timing, task.manifest))
    key = CalibrationKey(SLOT, TASK, task.content_hash(), method)
    now = time.time()
    every_s = svc.settings.limits.calibration.every_s

    def looking_at(t: float) -> Recalibrator:
        return Recalibrator(svc, quiet_s=0.0, clock=lambda: t)

    assert looking_at(now).tick() is None  # nothing calibrated here
    svc.store.add_calibration(key._replace(task_sha256="0" * 64), _run("old-content", now - 2 * every_s))
    svc.store.add_calibration(key._replace(method_sha256="1" * 64), _run("old-method", now - 2 * every_s))
    assert looking_at(now).tick() is None  # only another content's and another method's requests, long ago
    svc.store.add_calibration(key, _run("recent", now - every_s / 2))
    assert looking_at(now).tick() is None  # its latest is not old enough
    # just started: the quiet spell has not passed, whatever is due
    assert Recalibrator(svc, clock=lambda: now + every_s).tick() is None

    clock = [now + every_s]
    maker = Recalibrator(svc, quiet_s=0.0, clock=lambda: clock[0])
    job = maker.tick()
    assert job is not None
    record = svc.store.get(job)
    spec = spec_as(record.spec, EvalSpec)
    assert record.owner == RECALIBRATION_OWNER and spec.task == TASK and spec.calibration
    # one at a time: while it is queued or running, nothing more
    assert looking_at(now + 2 * every_s).tick() is None
    svc.scheduler.cancel(job)
    deadline = time.monotonic() + 60
    while svc.store.get(job).state != JobState.finished and time.monotonic() < deadline:
        time.sleep(0.2)
    assert svc.store.get(job).state == JobState.finished
    # whether it stored a run (it passed before the cancel came) or none (cancelled), every stored one is
    # over every_s old on this clock: due, but not made again before every_s from when it was made
    clock[0] = now + 1.5 * every_s
    assert maker.tick() is None
    clock[0] = now + 2 * every_s + 1
    assert maker.tick() is not None


def test_a_test_server_makes_none_of_its_own(server: Any) -> None:
    """tests.conftest's servers leave their queues to the tests (a default ``every_s`` becomes 0)."""
    assert server.settings.limits.calibration.every_s == 0.0
    assert Recalibrator(server.services, quiet_s=0.0, clock=lambda: 1e12).tick() is None
