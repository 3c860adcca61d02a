"""The API's data: what a client asks for (JobSpec, one model per kind), what it is shown (JobView),
how a job ended (Verdict). The server's own record of a job is runner.store.JobRecord.

A job's life: ``created`` (spec accepted, waiting for the sent directory) -> ``queued``
(input validated and stored) -> ``running`` (container started on a lease) -> ``finished``
(with a :class:`Verdict`). Outcomes are data: nothing in the scheduler raises to say
"the job timed out".
"""

from __future__ import annotations

import functools
import shlex
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, TypeAdapter, computed_field, model_validator


class Model(BaseModel):
    """Every model here: its validator is built when first used, not on import (a CLI command that
    needs two of them does not pay for all of them at start-up)."""

    model_config = ConfigDict(defer_build=True)


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


class ErrorBody(Model):
    """Every error answer of the API, whatever the route or the cause."""

    error: str = Field(description="a stable code: bad_request, unauthorized, not_found, too_many_jobs, ...")
    message: str = Field(description="what went wrong, for a person (control characters escaped)")


class SpecBase(Model):
    """What every kind of job asks for. Unknown fields are refused (a typo must not be ignored)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    kind: JobKindName
    image: str | None = Field(None, description="set by the server on a rerun: the image digest to run again")
    timeout_s: float = Field(600.0, gt=0, description="wall-clock limit for the job, seconds")
    gpus: int = Field(1, ge=0, description="GPUs to lease; CPU slots stand in on a host without GPUs")

    @model_validator(mode="after")
    def _encodable(self) -> SpecBase:
        """Every text of the spec is valid Unicode: JSON can carry a lone surrogate ("\\ud800"), which
        no argv, environment, file or database can hold."""
        for name, value in self:
            if not _encodable(value):
                raise ValueError(f"{name} holds a lone surrogate (text that is not valid Unicode)")
        return self

    def words(self) -> list[str]:
        """The command-line words the job carries (checked against the argv budget)."""
        return []

    def client_env(self) -> dict[str, str]:
        """The environment the client asked for (validated by runner.envpolicy)."""
        return {}

    def title(self) -> str:
        """The job on one line, as a person would have typed it."""
        return f"{self.kind} {shlex.join(self.words())}".rstrip()


def _encodable(value: object) -> bool:
    if isinstance(value, str):
        try:
            value.encode()
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, dict):
        return all(_encodable(k) and _encodable(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return all(_encodable(v) for v in value)
    return True


class PythonSpec(SpecBase):
    """``kcoral python``: python with these arguments, next to the sent files."""

    kind: Literal[JobKindName.python] = JobKindName.python
    argv: list[str] = Field(default_factory=list, description="the arguments after 'python' (SCRIPT ARGS, -c, -m)")
    env: dict[str, str] = Field(default_factory=dict, description="extra environment, validated")

    def words(self) -> list[str]:
        return self.argv

    def client_env(self) -> dict[str, str]:
        return self.env


class EvalSpec(SpecBase):
    """``kcoral eval``: the submission only; the task owns inputs, environment and timing."""

    kind: Literal[JobKindName.eval] = JobKindName.eval
    task: str = Field(description="the task id, e.g. demo/softmax (GET /v1/tasks lists them)")
    timeout_s: float = Field(
        0.0, ge=0, description="0: the task's timeout_s (the server fills it in); more than the task's is refused"
    )
    check: bool = Field(
        False,
        description="the public workloads' correctness only, with full tracebacks: no holdout, no timing, no score",
    )

    def title(self) -> str:
        return f"eval {'--check ' if self.check else ''}{self.task}"


class ProfileSpec(SpecBase):
    """A profiler (ncu, iket) around the client's command."""

    argv: list[str] = Field(default_factory=list, description="the profiler's own options")
    command: list[str] = Field(default_factory=list, description="the profiled command")
    env: dict[str, str] = Field(default_factory=dict, description="extra environment, validated")

    def words(self) -> list[str]:
        return [*self.argv, *self.command]

    def title(self) -> str:
        return f"{self.kind} {shlex.join(self.argv)} -- {shlex.join(self.command)}"

    def client_env(self) -> dict[str, str]:
        return self.env


class NcuSpec(ProfileSpec):
    """``kcoral ncu``: argv = ncu options, command = the profiled command."""

    kind: Literal[JobKindName.ncu] = JobKindName.ncu


class IketSpec(ProfileSpec):
    """``kcoral iket``: argv = [run-iket options] profile [profile options], command = the traced command."""

    kind: Literal[JobKindName.iket] = JobKindName.iket


def _kind_of(value: Any) -> str:
    """The discriminator: the ``kind`` field, python when a client leaves it out."""
    if isinstance(value, dict):
        return str(value.get("kind", JobKindName.python))
    return str(getattr(value, "kind", JobKindName.python))


#: What a client submits (POST /v1/jobs), one model per kind. The sent directory follows as a tar.
JobSpec = Annotated[
    Annotated[PythonSpec, Tag(JobKindName.python)]
    | Annotated[EvalSpec, Tag(JobKindName.eval)]
    | Annotated[NcuSpec, Tag(JobKindName.ncu)]
    | Annotated[IketSpec, Tag(JobKindName.iket)],
    Discriminator(
        _kind_of,
        custom_error_type="unknown_kind",
        custom_error_message=f"unknown job kind; a server runs: {', '.join(JobKindName)}",
    ),
]


@functools.cache
def _spec_adapter() -> TypeAdapter[PythonSpec | EvalSpec | NcuSpec | IketSpec]:
    return TypeAdapter(JobSpec)


def parse_spec(data: str | bytes | dict[str, Any]) -> PythonSpec | EvalSpec | NcuSpec | IketSpec:
    """A JobSpec from JSON text or a dict; pydantic.ValidationError when it is not one."""
    if isinstance(data, dict):
        return _spec_adapter().validate_python(data)
    return _spec_adapter().validate_json(data)


class GpuInfo(Model):
    index: int
    minor: int = Field(-1, description="N of /dev/nvidiaN (differs from the NVML index on some hosts)")
    uuid: str
    name: str
    memory_total_mib: int
    driver: str = ""


class ImageInfo(Model):
    ref: str
    digest: str = ""


class OutputFile(Model):
    path: str
    size: int
    sha256: str


class StepTimes(Model):
    """When one of a job's containers ran (Unix seconds, the server's clock)."""

    name: str
    started: float
    ended: float


class JobTimes(Model):
    """Unix timestamps (seconds), and when each container ran."""

    created: float
    queued: float | None = None
    started: float | None = None
    finished: float | None = None
    steps: list[StepTimes] = []

    @computed_field  # type: ignore[prop-decorator]
    @property
    def phases(self) -> dict[str, float]:
        """Seconds per phase, in order: upload (created to queued), queue, start (the lease to the first
        container: the plan, the image pinned, the containers made), each container by its step's
        name, collect (the last container's end to finished: outputs checked and copied, documents)."""
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
        return out


class JobView(Model):
    """A job as the API shows it (GET /v1/jobs/{id}): what its owner may see. The server keeps its
    own record (runner.store.JobRecord); environment values never come back, only their names."""

    id: str
    owner: str
    state: JobState
    spec: JobSpec
    env_names: list[str] = Field(default_factory=list)
    verdict: Verdict | None = None
    exit_code: int | None = None
    reason: str = ""
    queue_position: int | None = None
    image: ImageInfo | None = None
    gpus: list[GpuInfo] = Field(default_factory=list)
    slot: str = ""
    input_sha256: str = ""
    input_bytes: int = 0
    log_bytes: int = 0
    times: JobTimes
    outputs: list[OutputFile] = Field(default_factory=list)
