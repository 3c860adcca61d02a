"""The API's data: what a client asks for (a spec, one class per kind), what it is shown (JobView),
how a job ended (Verdict). The server's own record of a job is runner.store.JobRecord.

Plain dataclasses, so that a client imports no validation library: kcoral.protocol.typeddata's
``from_data`` makes them from JSON, checking every type (THE one parser, on the client and on the
server), and its ``to_data`` makes their JSON. FastAPI (the server only) is shown the same classes.

A job's life: ``created`` (spec accepted, waiting for the sent directory) -> ``queued``
(input validated and stored) -> ``running`` (container started on a lease) -> ``finished``
(with a :class:`Verdict`). Outcomes are data: nothing in the scheduler raises to say
"the job timed out".
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, TypeVar

from kcoral.protocol.printable import is_control
from kcoral.protocol.typeddata import DataError, from_data, parse_json

_T = TypeVar("_T")


class JobState(StrEnum):
    created = "created"
    queued = "queued"
    running = "running"
    finished = "finished"


class JobKindName(StrEnum):
    """The kinds of job a server runs (runner.jobkinds)."""

    python = "python"
    eval = "eval"
    ncu = "ncu"
    iket = "iket"
    sanitizer = "sanitizer"
    timeline = "timeline"
    proton = "proton"


class Verdict(StrEnum):
    """How a finished job ended. ``exit``: the program exited non-zero (see exit_code); ``rejected``:
    an evaluation ran to its end and the submission did not pass (its report says why)."""

    ok = "ok"
    exit = "exit"
    rejected = "rejected"
    timeout = "timeout"
    memory_limit = "memory_limit"
    output_limit = "output_limit"
    cancelled = "cancelled"
    #: the server shut down while the job ran (it was stopped after a grace period): run it again
    interrupted = "interrupted"
    #: an evaluation whose submission passed every check but whose timing the host was too noisy to
    #: trust: no score, and not the submission's fault (evaluate again)
    inconclusive = "inconclusive"
    infrastructure_error = "infrastructure_error"


@dataclass(kw_only=True)
class ErrorBody:
    """Every error answer of the API, whatever the route or the cause."""

    #: a stable code: bad_request, unauthorized, not_found, too_many_jobs, ...
    error: str
    #: what went wrong, for a person (control characters escaped)
    message: str


#: what a job's ``gpu_type`` may be: "any" or a short GPU type such as H200
GPU_TYPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,31}")


@dataclass(kw_only=True)
class SpecBase:
    """What every kind of job asks for. Unknown fields are refused (a typo must not be ignored)."""

    #: for pydantic (FastAPI's schema of the API): a spec has no other fields
    __pydantic_config__ = {"extra": "forbid"}
    #: for ``from_data``: a field this class does not have is an error, not ignored
    STRICT = True
    #: whether timeout_s may be 0 (an evaluation: the task's own limit)
    ZERO_TIMEOUT = False

    kind: JobKindName
    #: set by the server on a rerun: the image digest to run again
    image: str | None = None
    #: wall-clock limit for the job, seconds
    timeout_s: float = 600.0
    #: GPUs to lease; CPU slots stand in on a host without GPUs
    gpus: int = 1
    #: the type of GPU to lease ("H200", matched without case against the short NVML name), or "any"
    gpu_type: str = "any"

    def __post_init__(self) -> None:
        if self.ZERO_TIMEOUT and not self.timeout_s >= 0:
            raise DataError("timeout_s", "must be 0 or more")
        if not self.ZERO_TIMEOUT and not self.timeout_s > 0:
            raise DataError("timeout_s", "must be more than 0")
        if self.gpus < 0:
            raise DataError("gpus", "must be 0 or more")
        if not GPU_TYPE.fullmatch(self.gpu_type):
            raise DataError("gpu_type", "must be 'any' or a GPU type such as H200 (letters, digits, '-', '_', '.')")

    def words(self) -> list[str]:
        """The command-line words the job carries (checked against the argv budget)."""
        return []

    def cores(self) -> int:
        """The CPU cores the job needs on its lease (runner.leases takes CPU slots enough for them)."""
        return 1

    def client_env(self) -> dict[str, str]:
        """The environment the client asked for (validated by kcoral.protocol.jobenv.refusal and runner.envpolicy)."""
        return {}

    def title(self) -> str:
        """The job on one line, as a person would have typed it."""
        return f"{self.kind} {shlex.join(self.words())}".rstrip()


@dataclass(kw_only=True)
class PythonSpec(SpecBase):
    """``kcoral python``: python with these arguments, next to the sent files."""

    kind: Literal[JobKindName.python] = JobKindName.python
    #: the arguments after 'python' (SCRIPT ARGS, -c, -m)
    argv: list[str] = field(default_factory=list)
    #: extra environment, validated
    env: dict[str, str] = field(default_factory=dict)

    def words(self) -> list[str]:
        return self.argv

    def client_env(self) -> dict[str, str]:
        return self.env


#: the cores a timed evaluation needs: the judge's and the candidate's kept apart (tasks.harness.cores)
EVAL_CORES = 2
#: the most characters of an evaluation's label
LABEL_CHARS = 100


@dataclass(kw_only=True)
class EvalSpec(SpecBase):
    """``kcoral eval``: the submission only; the task owns inputs, environment and timing."""

    ZERO_TIMEOUT = True

    kind: Literal[JobKindName.eval] = JobKindName.eval
    #: the task id, e.g. demo/softmax (GET /v1/tasks lists them)
    task: str
    #: 0: the task's timeout_s (the server fills it in); more than the task's is refused
    timeout_s: float = 0.0
    #: the public workloads' correctness only, with full tracebacks: no holdout, no timing, no score
    check: bool = False
    #: an A/A request (tasks.calibration): the task's template as the candidate. Set by the server
    #: alone (POST /v1/calibrations, a warm-up); a client's spec with it is refused
    calibration: bool = False
    #: the candidate's name in the history (``kcoral eval --label``; the CLI's default: the submission
    #: folder's name and the start of its digest, kcoral.protocol.submission.default_label)
    label: str = ""

    def __post_init__(self) -> None:
        super().__post_init__()
        if len(self.label) > LABEL_CHARS:
            raise DataError("label", f"must be at most {LABEL_CHARS} characters")
        if any(is_control(c) for c in self.label):
            raise DataError("label", "must hold no control characters (tabs, newlines, escapes)")

    def title(self) -> str:
        if self.calibration:
            return f"calibrate {self.task}"
        label = f" --label {shlex.quote(self.label)}" if self.label else ""
        return f"eval {'--check ' if self.check else ''}{self.task}{label}"

    def cores(self) -> int:
        """A timed evaluation keeps the candidate off the judge's cores (tasks.harness.cores); a check
        times nothing."""
        return 1 if self.check else EVAL_CORES


@dataclass(kw_only=True)
class ProfileSpec(SpecBase):
    """A profiler (ncu, iket, compute-sanitizer, Proton) around the client's command."""

    #: the profiler's own options
    argv: list[str] = field(default_factory=list)
    #: the profiled command
    command: list[str] = field(default_factory=list)
    #: extra environment, validated
    env: dict[str, str] = field(default_factory=dict)

    def words(self) -> list[str]:
        return [*self.argv, *self.command]

    def title(self) -> str:
        return f"{self.kind} {shlex.join(self.argv)} -- {shlex.join(self.command)}"

    def client_env(self) -> dict[str, str]:
        return self.env


@dataclass(kw_only=True)
class NcuSpec(ProfileSpec):
    """``kcoral ncu``: argv = ncu options, command = the profiled command."""

    kind: Literal[JobKindName.ncu] = JobKindName.ncu


@dataclass(kw_only=True)
class IketSpec(ProfileSpec):
    """``kcoral iket``: argv = [run-iket options] profile [profile options], command = the traced command."""

    kind: Literal[JobKindName.iket] = JobKindName.iket


@dataclass(kw_only=True)
class SanitizerSpec(ProfileSpec):
    """``kcoral sanitizer``: argv = compute-sanitizer options (``--tool=memcheck``, ...), command = the checked
    command."""

    kind: Literal[JobKindName.sanitizer] = JobKindName.sanitizer


@dataclass(kw_only=True)
class TimelineSpec(ProfileSpec):
    """``kcoral timeline``: argv = the recorder's options (``--record-shapes``, ...), command = the recorded
    Python command (``python SCRIPT|-m MODULE|-c CODE ARGS``)."""

    kind: Literal[JobKindName.timeline] = JobKindName.timeline


@dataclass(kw_only=True)
class ProtonSpec(ProfileSpec):
    """``kcoral proton``: argv = kcoral's Proton options (``--data=trace``, ``--granularity=warp``, ...),
    command = the Python command whose Triton kernels mark scopes with triton.profiler.language."""

    kind: Literal[JobKindName.proton] = JobKindName.proton


#: What a client submits (POST /v1/jobs), one class per kind, told apart by ``kind`` (python when a
#: client leaves it out). The sent directory follows as a tar.
JobSpec = PythonSpec | EvalSpec | NcuSpec | IketSpec | SanitizerSpec | TimelineSpec | ProtonSpec


def parse_spec(data: str | bytes | dict[str, Any]) -> JobSpec:
    """A JobSpec from JSON text or a dict; :class:`DataError` when it is not one."""
    return from_data(JobSpec, data if isinstance(data, dict) else parse_json(data))  # type: ignore[arg-type]


@dataclass(kw_only=True)
class GpuInfo:
    index: int
    #: N of /dev/nvidiaN (differs from the NVML index on some hosts)
    minor: int = -1
    uuid: str
    name: str
    memory_total_mib: int
    driver: str = ""


@dataclass(kw_only=True)
class ImageInfo:
    ref: str
    digest: str = ""


@dataclass(kw_only=True)
class OutputFile:
    path: str
    size: int
    sha256: str


@dataclass(kw_only=True)
class StepTimes:
    """When one of a job's containers ran (Unix seconds, the server's clock)."""

    name: str
    started: float
    ended: float


@dataclass(kw_only=True)
class JobTimes:
    """Unix timestamps (seconds), and when each container ran."""

    created: float
    queued: float | None = None
    started: float | None = None
    finished: float | None = None
    steps: list[StepTimes] = field(default_factory=list)
    #: seconds per phase, in order (derived from the rest, never read from JSON): upload (created to
    #: queued), queue, start (the lease to the first container: the plan, the image pinned, the
    #: containers made), each container by its step's name, collect (the last container's end to
    #: finished: outputs checked and copied, documents)
    phases: dict[str, float] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        t = self
        out: dict[str, float] = {}

        def put(name: str, a: float | None, b: float | None) -> None:
            if a is not None and b is not None:
                out[name] = round(max(b - a, 0.0), 3)

        put("upload", t.created, t.queued)
        put("queue", t.queued, t.started)
        if t.steps:
            put("start", t.started, min(s.started for s in t.steps))
            for step in t.steps:
                put(step.name, step.started, step.ended)
            put("collect", max(s.ended for s in t.steps), t.finished)
        self.phases = out


@dataclass(kw_only=True)
class Score:
    """An evaluation's score: the geometric mean of its timed workloads' speedups over the baseline
    (report.json's ``summary``), with its 95% interval."""

    speedup: float
    speedup_lo: float
    speedup_hi: float


@dataclass(kw_only=True)
class JobView:
    """A job as the API shows it (GET /v1/jobs/{id}): what its owner may see. The server keeps its
    own record (runner.store.JobRecord); environment values never come back, only their names."""

    id: str
    owner: str
    state: JobState
    spec: JobSpec
    env_names: list[str] = field(default_factory=list)
    verdict: Verdict | None = None
    exit_code: int | None = None
    reason: str = ""
    queue_position: int | None = None
    #: a queued job that no slot in service can take: why (the slots it needs drained, with their
    #: reasons; a cluster's hosts draining or absent); "" while it only waits its turn
    waiting: str = ""
    image: ImageInfo | None = None
    gpus: list[GpuInfo] = field(default_factory=list)
    slot: str = ""
    input_sha256: str = ""
    input_bytes: int = 0
    log_bytes: int = 0
    times: JobTimes
    outputs: list[OutputFile] = field(default_factory=list)
    #: an evaluation's submission: sha256 over the files the server received, whatever their order
    #: (kcoral.protocol.submission; input_sha256 is the tar's own, as sent); "" for other jobs
    submission_digest: str = ""
    #: a timed evaluation's score, once it has one
    score: Score | None = None


#: the most A/A requests one POST /v1/calibrations asks for
MAX_CALIBRATION_REQUESTS = 20


@dataclass(kw_only=True)
class CalibrationRequest:
    """POST /v1/calibrations: A/A requests of a task, each the task's own template (the baseline's
    approach, server-made) evaluated as the candidate, queued as the caller's jobs."""

    __pydantic_config__ = {"extra": "forbid"}
    STRICT = True

    #: the task id, e.g. demo/softmax
    task: str
    #: how many (1-20); none given: the server's default (tasks.calibration.DEFAULT_REQUESTS)
    requests: int | None = None

    def __post_init__(self) -> None:
        if self.requests is not None and not 1 <= self.requests <= MAX_CALIBRATION_REQUESTS:
            raise DataError("requests", f"must be 1 to {MAX_CALIBRATION_REQUESTS}")


@dataclass(kw_only=True)
class CalibrationJobs:
    """What POST /v1/calibrations queued."""

    #: the A/A requests' job ids, in the order they were queued
    jobs: list[str]
    #: where they run, and where a floor is kept (per slot and core layout)
    slot_note: str


@dataclass(kw_only=True)
class CalibrationFloors:
    """A slot's A/A calibration of one task version (GET /v1/calibrations, /v1/health)."""

    #: the lease's slots and the evaluation's core layout ("cpu0+cpu1@0:0:1")
    slot: str
    task: str
    task_sha256: str
    #: the timing method the A/A requests were measured with (tasks.calibration.method_sha256; "": kept
    #: before a calibration named its method)
    method_sha256: str = ""
    #: whether task_sha256 is the task's content now and method_sha256 its timing method on this server
    #: (only then do evaluations use the floor)
    current: bool
    #: timed workload -> its floor (tasks.calibration.NoiseFloor.document()); absent: too few requests
    workloads: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: the A/A requests a floor may rest on now (recent enough)
    requests: int = 0
