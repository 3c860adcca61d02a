"""Runs any job: its kind's plan, on its lease, through the executor. The one place where a job's
image is pinned, its containers run, engine errors become a result, and its outputs are collected.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from kcoral.protocol.errors import InsufficientStorage, KcoralError
from kcoral.protocol.framing import SERVER
from kcoral.protocol.models import ImageInfo, OutputFile, Verdict
from kcoral.runner.archive import collect_outputs
from kcoral.runner.errors import DISK_FULL, DISK_FULL_REASON, LOG_DISK_FULL, disk_writes
from kcoral.runner.jobfs import remove_tree
from kcoral.runner.jobkinds import kind_for
from kcoral.runner.joblog import LogWriter, streams_path
from kcoral.runner.leases import Lease
from kcoral.runner.limits import Limits
from kcoral.runner.logsetup import child_thread
from kcoral.runner.plan import (
    CalibrationBook,
    Executor,
    Finished,
    JobContext,
    Outcomes,
    Plan,
    RunResult,
    StepOutcome,
    judge,
)
from kcoral.runner.settings import Settings
from kcoral.runner.store import JobPaths, JobRecord
from kcoral.runner.wakeqos import wake_latency

#: seconds between GPU telemetry readings while a job's containers run
TELEMETRY_PERIOD_S = 0.2


class Telemetry(Protocol):
    def telemetry(self, index: int) -> dict[str, float] | None: ...


@dataclass
class JobRun:
    """One job to run on its lease, and what the run may use."""

    job: JobRecord
    lease: Lease
    paths: JobPaths
    cancel: threading.Event
    executor: Executor
    settings: Settings
    on_image: Callable[[ImageInfo], None]
    telemetry: Telemetry | None = None
    #: the server's A/A calibrations, for an evaluation (runner.plan.JobContext)
    calibrations: CalibrationBook | None = None


def run_job(run: JobRun) -> RunResult:
    """Plan the job, pin its image, run its containers, finish and collect. Never raises for an
    engine failure (the job gets infrastructure_error with the engine's message), nor for a full
    disk met by any write of the server's for the job (its folders, its log, its outputs): the job
    ends infrastructure_error saying so, and what it left half written is removed."""
    deadline = time.monotonic() + run.job.spec.timeout_s
    plan: Plan | None = None
    steps: list[StepOutcome] = []
    full = False  # the disk was full for one of the server's writes for the job
    try:
        ctx = JobContext(run.job, run.paths, run.lease, run.settings, run.executor, run.calibrations)
        plan = kind_for(run.job.spec.kind).plan(ctx)
        image = run.executor.image_info(plan.image)
        run.on_image(image)
        pinned = image.digest or image.ref
        awake = run.settings.limits.eval_wake_latency_us if plan.hold_cpus_awake else None
        with _sampling(run.telemetry, run.lease) as telemetry, _held_awake(awake) as wake:
            steps = run.executor.run_group(
                run.job.id, pinned, plan.steps, run.lease, deadline, run.cancel, run.paths.log
            )
        leader = steps[0]
        if leader.killed or plan.finish is None:
            finished = judge(leader, run.settings.limits)
            if leader.killed and plan.explain_kill is not None:
                finished = plan.explain_kill(finished)
        else:
            finished = plan.finish(Outcomes(steps, image, telemetry, wake))
    except KcoralError as exc:  # the engine failed, or (a server set-up problem) the kind cannot be loaded
        finished = Finished(Verdict.infrastructure_error, reason=exc.message)
        full = isinstance(exc, InsufficientStorage)
    except OSError as exc:  # a write of the server's own for the job: its folders, its plan's files
        if exc.errno not in DISK_FULL:
            raise
        finished, full = Finished(Verdict.infrastructure_error, reason=f"{DISK_FULL_REASON}: the job was stopped"), True
    lost = [s.log or run.paths.log for s, o in zip(plan.steps if plan else [], steps, strict=False) if o.log_lost]
    result, kept = _record(finished, plan, run.paths, run.settings.limits, collect=not lost)
    if full or lost or not kept:
        result = _without_partial_files(result, run.paths, lost)
    result.steps = [s.times for s in steps if s.times is not None]
    return result


def _without_partial_files(result: RunResult, paths: JobPaths, lost: list[Path]) -> RunResult:
    """A job that the full disk ended: infrastructure_error saying so, no outputs (their copies go),
    and none of the ``lost`` logs, which could not be kept whole. Its input stays, for a rerun."""
    remove_tree(paths.outputs)
    for log in lost:
        log.unlink(missing_ok=True)
        streams_path(log).unlink(missing_ok=True)
    if lost:
        reason = LOG_DISK_FULL
    else:
        reason = result.reason if result.reason.startswith(DISK_FULL_REASON) else f"{DISK_FULL_REASON}: {result.reason}"
    log_bytes = 0 if paths.log in lost else result.log_bytes
    return RunResult(Verdict.infrastructure_error, result.exit_code, reason, log_bytes, [], result.steps)


def _record(
    finished: Finished, plan: Plan | None, paths: JobPaths, limits: Limits, collect: bool = True
) -> tuple[RunResult, bool]:
    """The job's outputs (the plan's output folder, checked, then the kind's documents) and its log
    (none of them with ``collect`` False), and whether they fit on the disk. The raw folders go
    whatever happens; when the server cannot keep the outputs, the partial copies go too and the job
    ends infrastructure_error, saying why (and how it had ended, where it had a reason)."""
    outputs: list[OutputFile] = []
    notes: list[str] = []
    kept = True
    try:
        if collect:
            with disk_writes("the job's outputs could not be kept"):
                finished, outputs, notes = _keep_outputs(finished, plan, paths, limits)
    except KcoralError as exc:
        remove_tree(paths.outputs)
        # how the job had ended stays in the reason: a job killed for its log flood, say, whose outputs
        # then met a disk filled meanwhile
        earlier = f"; before that, {finished.reason}" if finished.reason else ""
        finished, outputs, notes = Finished(Verdict.infrastructure_error, reason=exc.message + earlier), [], []
        kept = not isinstance(exc, InsufficientStorage)
    finally:
        for folder in (plan.collect, *plan.discard) if plan is not None else ():
            if folder is not None:
                remove_tree(folder)
    reason = "; ".join(x for x in (finished.reason, *notes) if x)
    log_bytes = paths.log.stat().st_size if paths.log.exists() else 0
    score = finished.score if finished.verdict is not Verdict.infrastructure_error else None
    return RunResult(finished.verdict, finished.exit_code, reason, log_bytes, outputs, score=score), kept


def _keep_outputs(
    finished: Finished, plan: Plan | None, paths: JobPaths, limits: Limits
) -> tuple[Finished, list[OutputFile], list[str]]:
    """The outputs kept (the plan's output folder, checked, then the kind's documents), the notes of
    those refused, and the kind's lines added to the log; the verdict, should the outputs pass their
    budget unseen while the job ran."""
    outputs: list[OutputFile] = []
    notes: list[str] = []
    if plan is not None and plan.collect is not None:
        collected = collect_outputs(plan.collect, paths.outputs, limits)
        outputs, notes = collected.files, [f"output refused: {r}" for r in collected.refused[:20]]
        if collected.over_budget and finished.verdict is Verdict.ok:  # it exited before a check saw it
            finished = replace(
                finished,
                verdict=Verdict.output_limit,
                reason=f"the outputs passed their budget ({limits.output_bytes} bytes, "
                f"{limits.output_files} files): what is over it is not returned",
            )
    for name, doc in finished.documents.items():
        outputs.append(_write_json(paths, name, doc))
    if finished.log_lines:
        with LogWriter(paths.log) as log:
            log.append(SERVER, ("\n".join(finished.log_lines) + "\n").encode())
    return finished, outputs, notes


def _write_json(paths: JobPaths, name: str, doc: dict[str, Any]) -> OutputFile:
    paths.outputs.mkdir(parents=True, exist_ok=True)
    data = json.dumps(doc, indent=1).encode()
    (paths.outputs / name).write_bytes(data)
    return OutputFile(path=name, size=len(data), sha256=hashlib.sha256(data).hexdigest())


@contextmanager
def _sampling(source: Telemetry | None, lease: Lease) -> Iterator[list[dict[str, float]]]:
    """The first leased GPU's telemetry, read every TELEMETRY_PERIOD_S while the block runs."""
    samples: list[dict[str, float]] = []
    if source is None or not lease.gpus:
        yield samples
        return
    stop = threading.Event()
    index = lease.gpus[0].index

    def sample() -> None:
        while not stop.wait(TELEMETRY_PERIOD_S):
            reading = source.telemetry(index)
            if reading:
                samples.append(reading)

    thread = threading.Thread(target=sample, name=child_thread("telemetry"), daemon=True)
    thread.start()
    try:
        yield samples
    finally:
        stop.set()
        thread.join(5)


@contextmanager
def _held_awake(limit_us: int | None) -> Iterator[str]:
    """The host's CPUs held to wake within ``limit_us`` while inside (runner.wakeqos); None: not asked."""
    if limit_us is None:
        yield ""
        return
    with wake_latency(limit_us) as held:
        yield held
