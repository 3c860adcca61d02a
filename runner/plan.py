"""A job as a plan: its image, the containers that run side by side on its lease, and how their
outcomes become the job's result.

A job kind (runner.jobkinds) turns a job into a :class:`Plan`; runner.runplan runs every plan the
same way (pin the image, run the containers through an :class:`Executor`, map engine errors,
finish, collect outputs). The executor only runs containers. Nothing here talks to Docker.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from kcoral.protocol.jobenv import INPUT_MOUNT
from kcoral.protocol.models import ImageInfo, OutputFile, Score, StepTimes, Verdict
from kcoral.runner.leases import Lease
from kcoral.runner.limits import Limits
from kcoral.runner.settings import JOB_UID, Settings
from kcoral.runner.store import JobPaths, JobRecord

if TYPE_CHECKING:
    from kcoral.tasks.calibration import AaRun, CalibrationKey


@dataclass(frozen=True)
class ContainerStep:
    """One container of a job. A python job is one; an evaluation runs two side by side. Every step
    of a plan runs the plan's image, by the digest it was pinned to."""

    command: list[str]
    env: dict[str, str]
    #: host path -> (path in the container, "ro" | "rw")
    mounts: dict[str, tuple[str, str]] = field(default_factory=dict)
    working_dir: str = INPUT_MOUNT
    #: host directory bound writable at /job/out, watched against the output budget
    output_dir: Path | None = None
    name: str = "job"
    #: bytes the step may leave in output_dir (None: the server's output_bytes limit)
    output_budget: int | None = None
    uid: int = JOB_UID
    #: the cores this container may run on (None: every core of the lease)
    cpus: tuple[int, ...] | None = None
    #: where the server writes this container's cgroup folder (its name under the engine's cgroup
    #: parent: runner.executor) once it is created and before it starts: how a trusted container
    #: finds another's CPU accounting without sharing its PID namespace
    cgroup_file: Path | None = None
    #: an empty read-only /sys/fs/cgroup: the container cannot watch (inotify) or read the counters
    #: the server or a supervisor reads about it
    hide_cgroups: bool = False
    #: an evaluation's: its cores are timed, so it runs under the job cgroup of the largest CPU weight
    #: (runner.jobcgroup), where host processes yield them; other jobs compete with the host as usual
    timed: bool = False
    #: where the container's output goes (None: the job's log, which the client sees)
    log: Path | None = None
    #: the most bytes of this step's output that are kept (None: the job's log_bytes, a breach beyond);
    #: past it the output is dropped, not a breach, and the log ends with a note of how much
    log_keep: int | None = None


@dataclass
class StepOutcome:
    """How one container ended: killed for a breach (verdict, reason), or its exit code."""

    killed: tuple[Verdict, str] | None
    exit_code: int | None
    oom_killed: bool
    log_bytes: int
    times: StepTimes | None = None
    #: the server's disk filled while the step ran: the job's log could not be kept whole
    log_lost: bool = False


@dataclass
class Outcomes:
    """What a plan's finish gets: each step's outcome (in plan order), the pinned image, and the
    leased GPU's telemetry sampled while the steps ran."""

    steps: list[StepOutcome]
    image: ImageInfo
    telemetry: list[dict[str, float]] = field(default_factory=list)
    #: the wake-up latency the host's CPUs were held to while the steps ran (runner.wakeqos; "": not asked)
    wake_latency: str = ""


@dataclass
class Finished:
    """A job's result as its kind decides it: the verdict, documents to add to its outputs (JSON),
    and lines to add to its log."""

    verdict: Verdict
    exit_code: int | None = None
    reason: str = ""
    documents: dict[str, dict[str, Any]] = field(default_factory=dict)
    log_lines: list[str] = field(default_factory=list)
    #: a timed evaluation's score (report.json's summary), kept with the job for its history
    score: Score | None = None


@dataclass(frozen=True)
class Plan:
    """What to run for one job. ``finish`` None: the leader's exit decides (:func:`judge`).
    ``image``: the reference every step runs; the plan runner pins it once and runs the steps by
    that digest, so a tag moved mid-job cannot change what the job ran."""

    image: str
    steps: list[ContainerStep]
    finish: Callable[[Outcomes], Finished] | None = None
    #: the folder whose files become the job's outputs (a step's /job/out), checked and copied once
    collect: Path | None = None
    #: folders of the job's own that go once it ended (the evaluation's private ones)
    discard: tuple[Path, ...] = ()
    #: when the leader was killed (deadline, cancel, a limit): the kind's account of where it was
    explain_kill: Callable[[Finished], Finished] | None = None
    #: the host's CPUs held to the operator's eval_wake_latency_us while the steps run (runner.wakeqos:
    #: an evaluation, whose timed calls must not pay a core's wake-up on one side only)
    hold_cpus_awake: bool = False


@dataclass
class RunResult:
    """How a job ended, as the store records it."""

    verdict: Verdict
    exit_code: int | None = None
    reason: str = ""
    log_bytes: int = 0
    outputs: list[OutputFile] = field(default_factory=list)
    #: when each container ran
    steps: list[StepTimes] = field(default_factory=list)
    #: a timed evaluation's score (Finished.score), when its documents were kept
    score: Score | None = None


@dataclass(frozen=True)
class JobContext:
    """What a kind knows when it plans a job."""

    job: JobRecord
    paths: JobPaths
    lease: Lease
    settings: Settings
    engine: EngineFacts
    #: the server's A/A calibrations (None: none kept where the job runs, a cluster host)
    calibrations: CalibrationBook | None = None


class CalibrationBook(Protocol):
    """The A/A calibrations the server keeps (runner.store.JobStore): what an evaluation reads of its
    slot's, and what an A/A request adds (tasks.calibration)."""

    def add_calibration(self, key: CalibrationKey, runs: list[AaRun]) -> None: ...

    def calibration_runs(self, key: CalibrationKey) -> list[AaRun]:
        """The key's latest A/A requests' figures, latest first."""


class EngineFacts(Protocol):
    """What a kind may ask of the engine while planning (it never runs containers itself)."""

    def cgroup_mount(self) -> tuple[str, str] | None:
        """(host folder of the job containers' cgroups, cgroup version), or None where unknown."""


class Executor(EngineFacts, Protocol):
    """Runs containers. The Docker executor (runner.executor) is the real one; tests of the
    scheduler and the plan runner use an in-memory one."""

    def image_info(self, ref: str) -> ImageInfo:
        """The image's digest; InfrastructureError when it is absent or the engine cannot say."""

    def has_image(self, ref: str) -> bool: ...

    def run_group(
        self,
        job_id: str,
        image: str,
        steps: list[ContainerStep],
        lease: Lease,
        deadline: float,
        cancel: threading.Event,
        job_log: Path,
    ) -> list[StepOutcome]:
        """Run the steps side by side on ``image`` (a pinned digest; the first step leads) to their
        end, or kill them all on a breach; InfrastructureError when the engine fails. Containers that
        have exited stay until :meth:`remove_exited` (the caller's, once it has kept the result)."""

    def remove_exited(self, job_id: str) -> None:
        """Remove what run_group left of ``job_id`` (containers that had exited)."""

    def remove_orphans(self, keep: Collection[str] = ()) -> int:
        """Remove this server's containers but those of the jobs in ``keep``; the count removed."""

    def reachable(self) -> bool:
        """Whether the engine answers now."""

    def tidy(self, running: set[str]) -> None:
        """Remove what was left behind while the engine was unreachable (not ``running`` jobs')."""

    def engine(self) -> dict[str, Any]: ...

    def close(self) -> None:
        """The server stops: what the executor keeps ready for later jobs goes."""

    def prewarm(self, job_id: str, image: str, step: ContainerStep, lease: Lease) -> None:
        """Get ready, in the background, for a later container like ``step`` on ``lease``."""


def judge(outcome: StepOutcome, limits: Limits) -> Finished:
    """The verdict of a step: the breach it was killed for, the OOM killer, or its exit code."""
    if outcome.killed:
        verdict, reason = outcome.killed
    elif outcome.oom_killed:
        verdict, reason = Verdict.memory_limit, f"killed at the memory limit ({limits.memory_bytes} bytes)"
    elif outcome.exit_code == 0:
        verdict, reason = Verdict.ok, ""
    else:
        verdict, reason = Verdict.exit, _exit_reason(outcome.exit_code)
    return Finished(verdict, outcome.exit_code, reason)


def _exit_reason(code: int | None) -> str:
    """A non-zero exit in words; 128 + N is death by signal N (what the container's init reports)."""
    try:
        name = signal.Signals(code - 128).name if code is not None and code > 128 else ""
    except ValueError:
        name = ""
    if name == "SIGKILL":  # the engine's OOM flag was not set: the memory limit did not do this
        return f"killed by SIGKILL (exit {code}), not at the memory limit: by something outside the job, or itself"
    if name:
        return f"killed by {name} (exit {code})"
    return f"exited with code {code}"
