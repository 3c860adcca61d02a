"""The job's data: what a client asks for, what the server records, how a job ended.

A job's life: ``created`` (spec accepted, waiting for the sent directory) -> ``queued``
(input validated and stored) -> ``running`` (container started on a lease) -> ``finished``
(with a :class:`Verdict`). Outcomes are data: nothing in the scheduler raises to say
"the job timed out".
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field


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
    """How a finished job ended. ``exit`` means the program exited non-zero (see exit_code)."""

    ok = "ok"
    exit = "exit"
    timeout = "timeout"
    memory_limit = "memory_limit"
    output_limit = "output_limit"
    cancelled = "cancelled"
    infrastructure_error = "infrastructure_error"


class JobSpec(BaseModel):
    """What a client submits (POST /v1/jobs). The sent directory follows as a tar (PUT .../input)."""

    kind: str = Field("python", description="python | eval | ncu | iket")
    argv: list[str] = Field(
        default_factory=list,
        description="python: the arguments after 'python' (SCRIPT ARGS, -c CODE, -m MOD); "
        "ncu/iket: the tool's own options",
    )
    command: list[str] = Field(default_factory=list, description="ncu/iket: the profiled command")
    task: str | None = Field(None, description="eval: the task id, e.g. demo/softmax")
    image: str | None = Field(None, description="set by the server on a rerun: the image digest to run again")
    env: dict[str, str] = Field(default_factory=dict, description="extra environment, validated")
    timeout_s: float = Field(600.0, gt=0, description="wall-clock limit for the job, seconds")
    gpus: int = Field(1, ge=0, description="GPUs to lease; CPU slots stand in on a host without GPUs")


class GpuInfo(BaseModel):
    index: int
    minor: int = Field(-1, description="N of /dev/nvidiaN (differs from the NVML index on some hosts)")
    uuid: str
    name: str
    memory_total_mib: int
    driver: str = ""


class ImageInfo(BaseModel):
    ref: str
    digest: str = ""


class OutputFile(BaseModel):
    path: str
    size: int
    sha256: str


class JobTimes(BaseModel):
    """Unix timestamps (seconds)."""

    created: float
    queued: float | None = None
    started: float | None = None
    finished: float | None = None


class JobView(BaseModel):
    """A job as the API shows it."""

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

    def public(self) -> JobView:
        """The view with env values removed (only names are ever shown back)."""
        return self.model_copy(update={"spec": self.spec.model_copy(update={"env": {}})})
