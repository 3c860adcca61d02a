"""Evaluations the server makes of its own at its start (``kcoral serve --warm-up TASK``).

For each task named, the server evaluates the task's template (what ``kcoral init`` writes: the
baseline's approach) as an ordinary job of :data:`WARM_UP_OWNER`. Its supervisor compiles, autotunes
and caches the reference's and the baseline's kernels in the judge's cache, so that the first request
does not: on a fresh H200 the KDA pinned task's first evaluation spent 97 s compiling FLA's kernels
in the supervisor, later ones 19-21 s in all (bench/results/gpu-host-issue12f). It is also a check of
the task end to end on this host: `/v1/health` lists each warm-up job, and its verdict says whether
the template passed. A warm-up of a task still queued from an earlier start is not made again.

Each warm-up is an A/A request too (tasks.calibration: the template against the baseline), and with
``--calibrate N`` N more follow it: the slot's noise floor is measured before the first request.
"""

from __future__ import annotations

import hashlib
import io
import logging
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from kcoral.protocol.errors import BadRequest, KcoralError
from kcoral.protocol.models import EvalSpec, JobKindName, JobState
from kcoral.runner.enqueue import queue_with_input
from kcoral.runner.errors import disk_writes
from kcoral.runner.jobkinds import kind_for, spec_as
from kcoral.runner.store import JobPaths

if TYPE_CHECKING:
    from kcoral.runner.services import Services

log = logging.getLogger("kcoral.warmup")

#: the owner of the server's own warm-up jobs (runner.auth refuses token names that start with "kcoral:")
WARM_UP_OWNER = "kcoral:warm-up"


@dataclass(frozen=True)
class WarmUp:
    task: str
    job: str = ""
    #: why it could not be queued (a full disk at the start, say): the server starts all the same
    error: str = ""
    #: the A/A requests queued after it (``kcoral serve --calibrate N``)
    calibrations: tuple[str, ...] = ()


def template_tar(source: bytes, name: str = "solution.py") -> bytes:
    """An upload holding ``name`` (the task's submission file: solution.py, a GPU MODE problem's
    submission.py) alone."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.size, info.mode = len(source), 0o644
        tar.addfile(info, io.BytesIO(source))
    return buf.getvalue()


def template(tasks_dir: Path | Sequence[Path], task_id: str) -> bytes:
    """The upload of a task's template (runner.warmup.template_tar), to warm up with; BadRequest for a
    task this server does not have, or one without a template (``kcoral serve`` refuses to start on
    either)."""
    from kcoral.tasks.contract import submission_file, template_source
    from kcoral.tasks.registry import find_task

    task = find_task(tasks_dir, task_id)
    source = template_source(task)
    if source is None:
        raise BadRequest(f"task {task_id} has no template to warm up with")
    return template_tar(source, submission_file(task))


def submit_warm_ups(svc: Services, task_ids: Sequence[str], calibrate: int = 0) -> list[WarmUp]:
    """Queue one evaluation of each task's template and ``calibrate`` more after it, less those of
    the task queued or running already (the oldest of them is its warm-up)."""
    tasks_dir = svc.settings.tasks_dirs
    waiting: dict[str, list[str]] = {}
    for job in reversed(svc.store.list(owner=WARM_UP_OWNER, limit=1000)):  # oldest first
        if job.state in (JobState.queued, JobState.running):
            waiting.setdefault(spec_as(job.spec, EvalSpec).task, []).append(job.id)
    made = []
    for task_id in task_ids:
        jobs = waiting.get(task_id, [])
        error = ""
        try:
            while len(jobs) < 1 + calibrate:
                jobs.append(queue_template(svc, tasks_dir, task_id, WARM_UP_OWNER))
        except KcoralError as exc:
            log.warning("no warm-up of %s: %s", task_id, exc.message)
            error = exc.message
        made.append(WarmUp(task_id, jobs[0] if jobs else "", error, tuple(jobs[1:])))
    return made


def queue_template(
    svc: Services, tasks_dir: Path | Sequence[Path], task_id: str, owner: str, waiting_cap: int | None = None
) -> str:
    """A new A/A request (tasks.calibration) of ``owner``: the task's template evaluated, queued; its job id."""
    data = template(tasks_dir, task_id)
    spec = replace(
        spec_as(kind_for(JobKindName.eval).validate(EvalSpec(task=task_id), svc.facts()), EvalSpec), calibration=True
    )

    def write_input(paths: JobPaths) -> None:
        with disk_writes("cannot store the template's input"):
            paths.tar.write_bytes(data)

    sha256 = hashlib.sha256(data).hexdigest()
    return queue_with_input(svc, owner, spec, write_input, sha256, len(data), waiting_cap=waiting_cap)
