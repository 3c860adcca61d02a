"""The server's A/A calibrations (tasks.calibration): asking for them, and what they say.

An A/A request is an evaluation of a task's own template (the baseline's approach) as the candidate,
made by the server (runner.warmup.queue_template): a client asks for some (POST /v1/calibrations,
``kcoral calibrate``) and gets them as its jobs, but never sends the code nor sets the flag. Each one
that passes adds its figures to the store under its slot key (tasks.evaluate.calibration_slot); the
floors are computed from the stored figures whenever they are shown, or used by an evaluation.
"""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING

from kcoral.protocol.errors import BadRequest, KcoralError, TooManyJobs
from kcoral.protocol.models import CalibrationFloors, CalibrationJobs, CalibrationRequest
from kcoral.runner.warmup import queue_template

if TYPE_CHECKING:
    from kcoral.runner.services import Services
    from kcoral.tasks.calibration import CalibrationKey

SLOT_NOTE = (
    "each request runs on the first free slot that can take an evaluation; a noise floor is kept per slot and "
    "core layout, and needs {min} passed requests on one (GET /v1/calibrations lists them)"
)


def request_calibrations(svc: Services, owner: str, asked: CalibrationRequest) -> CalibrationJobs:
    """Queue ``asked.requests`` A/A requests of the task as ``owner``'s jobs: all of them, or none
    (TooManyJobs when they would pass the owner's cap of waiting jobs)."""
    from kcoral.tasks.calibration import DEFAULT_REQUESTS, MIN_REQUESTS
    from kcoral.tasks.contract import template_source
    from kcoral.tasks.registry import find_task

    tasks_dir = svc.settings.tasks_dirs
    task = find_task(tasks_dir, asked.task)  # BadRequest naming the tasks there are
    if template_source(task) is None:
        raise BadRequest(f"task {task.id} has no template: an A/A request evaluates the task's template")
    svc.placement.check(1)
    count = asked.requests or DEFAULT_REQUESTS
    cap = svc.settings.limits.queued_per_token
    waiting = svc.store.waiting(owner)
    if waiting + count > cap:
        raise TooManyJobs(
            f"you have {waiting} jobs waiting and this server takes {cap} at most: "
            f"{count} A/A requests would pass it; ask for fewer, or wait for some to finish"
        )
    jobs: list[str] = []
    try:
        for _ in range(count):
            jobs.append(queue_template(svc, tasks_dir, task.id, owner, waiting_cap=cap))
    except KcoralError:
        for job_id in jobs:  # all or none: those queued already go
            svc.scheduler.cancel(job_id)
        raise
    return CalibrationJobs(jobs=jobs, slot_note=SLOT_NOTE.format(min=MIN_REQUESTS))


def calibration_floors(svc: Services, task: str | None = None, current_only: bool = False) -> list[CalibrationFloors]:
    """Every stored calibration key's floors now (of ``task`` alone, when given; with ``current_only``,
    of the tasks' current contents alone)."""
    from kcoral.tasks.calibration import floors, usable

    now = time.time()
    rows = []
    for key, current in _keys(svc, task):
        if current_only and not current:
            continue
        runs = svc.store.calibration_runs(key)
        found = floors(runs, now, svc.settings.limits.calibration)
        rows.append(
            CalibrationFloors(
                slot=key.slot,
                task=key.task,
                task_sha256=key.task_sha256,
                method_sha256=key.method_sha256,
                current=current,
                workloads={w: f.document() for w, f in sorted(found.items())},
                requests=len({r.job for r in usable(runs, now, svc.settings.limits.calibration)}),
            )
        )
    return rows


def request_times(svc: Services) -> dict[str, list[float]]:
    """When each task's stored A/A requests of its current content and timing method were made (epoch s;
    the latest the store keeps, on any slot): the tasks runner.recalibration keeps measuring."""
    times: dict[str, dict[str, float]] = {}
    for key in (key for key, current in _keys(svc) if current):
        for run in svc.store.calibration_runs(key):  # one per workload: one time per request (job)
            times.setdefault(key.task, {})[run.job] = run.at
    return {task: list(by_job.values()) for task, by_job in times.items()}


def _keys(svc: Services, task: str | None = None) -> list[tuple[CalibrationKey, bool]]:
    """Every stored calibration key (of ``task`` alone, when given), each with whether it is of its task's
    content and timing method now."""
    keys = [k for k in svc.store.calibration_keys() if task is None or k.task == task]
    if not keys:
        return []
    now_measured = _measured_as(svc, {k.task for k in keys})
    return [(k, now_measured.get(k.task) == (k.task_sha256, k.method_sha256)) for k in keys]


def _measured_as(svc: Services, task_ids: set[str]) -> dict[str, tuple[str, str]]:
    """Each of these tasks' content digest and timing method digest on this server now (a task whose
    manifest's timing is wrong has none: no calibration of it is current)."""
    from kcoral.tasks.calibration import method_sha256
    from kcoral.tasks.cases import timing_method
    from kcoral.tasks.registry import all_tasks

    found: dict[str, tuple[str, str]] = {}
    defaults = svc.settings.limits.eval_timing
    for t in all_tasks(svc.settings.tasks_dirs):
        if t.id in task_ids:
            with contextlib.suppress(ValueError):
                found[t.id] = (t.content_hash(), method_sha256(timing_method(defaults, t.manifest)))
    return found
