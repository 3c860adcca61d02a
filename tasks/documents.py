"""The evaluation's documents the server serves and the client parses: report.json (EvalReport) and
receipt.json (Receipt). Built by the server from the supervisor's result (tasks.report,
tasks.evaluate); read by ``kcoral eval``, ``show`` and ``rerun`` through :func:`parse_report` and
:func:`parse_receipt`. The JSON leaves out what does not apply (a row without a speedup, a report
without a summary), so a key's presence means the figure exists.

Plain frozen dataclasses, declared and read the one way the API's data is (kcoral.protocol.typeddata:
``from_data`` checks every type, ``to_data`` writes the JSON): no validation library on either side.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeVar

from kcoral.protocol.models import JobState, Score, Verdict
from kcoral.protocol.typeddata import DataError, from_data, parse_json, to_data
from kcoral.tasks.harness.schema import Outcome


class Document:
    """A document's behaviour: its file name among the job's outputs, its JSON, a copy with changes."""

    #: the document's name among the job's outputs
    FILE: ClassVar[str] = ""

    def document(self) -> dict[str, Any]:
        """The JSON object as written to the job's outputs (the fields that are None left out)."""
        data: dict[str, Any] = to_data(self, drop_none=True)
        return data

    def but(self: D, **changes: Any) -> D:
        """A copy with ``changes`` (the documents are frozen)."""
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]


@dataclass(frozen=True, kw_only=True)
class WorkloadRow(Document):
    """One workload's verdict and, for a timed workload that passed, its figures (net of the protocol)."""

    id: str
    params: dict[str, Any]
    timed: bool
    verdict: Outcome
    reason: str = ""
    #: why a timed workload has no figures ("not timed: the holdout failed")
    note: str | None = None
    #: what the submission did that its verdict does not hold against it (it wrote into its inputs)
    warnings: list[str] | None = None
    stats: dict[str, dict[str, float]] = field(default_factory=dict)
    baseline_ms: float | None = None
    kernel_ms: float | None = None
    speedup: float | None = None
    speedup_lo: float | None = None
    speedup_hi: float | None = None
    samples: int | None = None
    #: the speedups of the samples' first and second halves in time order (the interval covers both)
    speedup_halves: list[float] | None = None
    #: the halves differ by more than 5%: the host's speed changed during the measurement
    drifted: bool | None = None
    #: what the speedup is a ratio of: "net" (each call less its iteration's protocol cost) or "raw" (the
    #: calls as timed: the protocol's cost dominated them, and subtracting it would amplify their bias)
    basis: Literal["net", "raw"] | None = None
    #: the protocol's fixed cost as a share of a call (its median over the submission's median raw call)
    protocol_share: float | None = None
    #: iterations left out: the judge's side was disturbed while they ran (tasks.harness.interference)
    disturbed: int | None = None
    #: each side's interquartile range of its call times over their median (how much they vary)
    baseline_spread: float | None = None
    kernel_spread: float | None = None
    stopped_by: str | None = None
    protocol_ms: float | None = None
    idle_cpu_ms: float | None = None
    idle_cpu_share: float | None = None
    early_cpu_ms: float | None = None
    early_cpu_share: float | None = None
    #: others' work on the candidate's core while its calls ran: the share of those calls' time
    #: (tasks.harness.interference; over TimingMethod.shared_core_share the workload is not scored)
    shared_core_share: float | None = None
    #: the interval of this request alone, before the slot's noise floor widened it
    speedup_within: list[float] | None = None
    #: the slot's A/A calibration folded in (tasks.calibration.NoiseFloor.document()); None: none
    calibration: dict[str, Any] | None = None
    #: no calibration: the noise between requests assumed instead and folded in (the method's
    #: uncalibrated_floor, a ratio: 0.11 is +-11%); None: none assumed (a calibration, or the request alone)
    assumed_floor: float | None = None
    #: the GPU while timed (NVML): median and lowest SM clock, highest temperature, iterations left out
    #: because it slowed itself, seconds it was let cool first
    gpu_clock_mhz: float | None = None
    gpu_clock_min_mhz: float | None = None
    gpu_temp_c: float | None = None
    throttled: int | None = None
    cooled_s: float | None = None
    #: calls per timed batch (the trusted batch mode: the figures above are per call, each a batch's
    #: time over its calls); None or 0: every call timed on its own
    batch: int | None = None
    #: the task's calls per batch, where the GPU's free memory held fewer (``batch``; none: one at a time)
    batch_asked: int | None = None
    #: the batches (and the per-call check's single calls) were replays of CUDA graphs captured once
    graph: bool | None = None
    #: in the batch mode, the same sides timed one call at a time in the same request: [speedup, lo, hi]
    per_call_speedup: list[float] | None = None


@dataclass(frozen=True, kw_only=True)
class Summary(Document):
    """The geometric mean of the timed workloads' speedups, its interval, and the spread."""

    speedup: float
    speedup_lo: float
    speedup_hi: float
    baseline_ms: float
    kernel_ms: float
    min_speedup: float
    max_speedup: float


@dataclass(frozen=True, kw_only=True)
class EvalReport(Document):
    """report.json: the holdout, each workload, the flags and the summary, and the printed lines."""

    FILE: ClassVar[str] = "report.json"

    task: str
    #: the holdout's verdict (None in a check: the public workloads' correctness only, no score)
    holdout: Outcome | None = None
    check: bool = False
    holdout_probes: int
    #: which kind of failure the holdout met (FAIL or ERROR), never its details
    holdout_failure: Outcome | None = None
    workloads: list[WorkloadRow] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    cpu_watch: str = ""
    #: the wake-up latency the host's CPUs were held to while it ran ("0 us", "not held: why", "the host's
    #: own": runner.wakeqos; "": a check, or an older report)
    wake_latency: str = ""
    #: why the candidate's figures hold a cost of where its calls run that nothing took off ("": none known;
    #: a lease of 2 cores on a slot with no A/A calibration of the task: tasks.harness.cores)
    position: str = ""
    passed: int
    total: int
    summary: Summary | None = None
    #: why the timing could not be trusted (the host too noisy): no summary then, and no score
    inconclusive: list[str] = field(default_factory=list)
    telemetry: dict[str, Any] = field(default_factory=dict)
    #: seconds per phase of the supervisor's work, in order (tasks.harness.schema.SupervisorResult.phases)
    phases: dict[str, float] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    #: True: an A/A request of the server's (tasks.calibration), the task's template as the candidate
    calibration: bool | None = None
    #: a pack problem's suite's own headline (tasks.packs.headline: KernelBench's fast_p terms, GPU
    #: MODE's geometric mean of its benchmarks' times)
    suite: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        """The evaluation passed: the holdout (a check has none), every workload, and no flag."""
        return self.correct and not self.inconclusive

    @property
    def score(self) -> Score | None:
        """The summary as the job's score (kept with it for its history); None without one (a check,
        an evaluation that did not time every workload)."""
        s = self.summary
        if s is None or self.check:
            return None
        return Score(speedup=s.speedup, speedup_lo=s.speedup_lo, speedup_hi=s.speedup_hi)

    @property
    def correct(self) -> bool:
        """Every check passed and nothing was flagged (the timing may still be inconclusive)."""
        holdout = self.check or self.holdout is Outcome.PASS
        return holdout and self.passed == self.total and not self.flags


@dataclass(frozen=True, kw_only=True)
class SampleTimes(Document):
    """One timed workload's raw samples on the supervisor's clock (ms), for a reader to recompute."""

    baseline_ms: list[float] | None = None
    kernel_ms: list[float] | None = None
    protocol_ms: list[float] | None = None
    #: per iteration: the supervisor marked it disturbed (left out of the speedup), and what its judge's side
    #: lost to waiting for a CPU or to interrupts (ms); absent in receipts from before they were measured
    disturbed: list[bool] | None = None
    judge_wait_ms: list[float] | None = None


@dataclass(frozen=True, kw_only=True)
class WorkloadScore(Document):
    """One workload's verdict in a receipt and, timed and passed, its speedup with its 95% interval."""

    verdict: Outcome
    speedup: float | None = None
    speedup_lo: float | None = None
    speedup_hi: float | None = None


@dataclass(frozen=True, kw_only=True)
class Repeat(Document):
    """One evaluation of the same submission, in a receipt's ``same_submission``."""

    job: str
    state: JobState
    verdict: Verdict | None = None
    score: Score | None = None
    finished: float | None = None


@dataclass(frozen=True, kw_only=True)
class SameSubmission(Document):
    """Every evaluation of a receipt's submission digest by the same token on the same task (timed ones
    for a timed evaluation, checks for a check), this one among them, as the server knew them when it
    signed: ``count`` of them, the newest ``evaluations`` listed oldest first."""

    count: int
    evaluations: list[Repeat] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class Receipt(Document):
    """receipt.json: what a rerun pins and a reader needs to trust or redo the score. The judge writes it
    (tasks.evaluate); the server that ran the job adds its own facts and signs it (runner.receipts):
    everything but ``signature`` is the signed statement (kcoral.protocol.receipts). The fields added
    since receipts were signed default to None, so an older receipt reads and writes back as it was."""

    FILE: ClassVar[str] = "receipt.json"

    job: str
    task: str
    task_version: str = ""
    #: sha256 over the task's files (names and bytes), and of its manifest.json alone
    task_sha256: str
    manifest_sha256: str | None = None
    image: str
    #: sha256 of the tar as the server received it (submission_digest: of the files, however packed)
    submission_sha256: str
    harness_version: str
    #: sha256 over the trusted code the judge's container ran (runner.codecopy's copy of kcoral's code)
    judge_code_sha256: str | None = None
    #: a check (--check): correctness only, no score
    check: bool | None = None
    gpus: list[dict[str, Any]] = field(default_factory=list)
    telemetry: dict[str, Any] = field(default_factory=dict)
    seed_hashes: dict[str, str] = field(default_factory=dict)
    timings: dict[str, SampleTimes] = field(default_factory=dict)
    #: the timing method and the judge's rules the evaluation ran under (TimingMethod: this server's
    #: ``timing_NAME`` settings with the task's own over them); None in a receipt from before
    method: dict[str, Any] | None = None
    #: each workload's verdict and speedup with its interval (report.json's rows)
    workloads: dict[str, WorkloadScore] | None = None
    finished: float
    # --- what the server adds as it signs (runner.receipts); None in a receipt from before ---
    #: the signing server's id (GET /v1/keys names it)
    server: str | None = None
    label: str | None = None
    submission_digest: str | None = None
    verdict: Verdict | None = None
    #: the evaluation's score (report.json's summary) with its 95% interval
    score: Score | None = None
    #: Unix seconds: created, queued, started (the job), finished (the judge)
    times: dict[str, float] | None = None
    same_submission: SameSubmission | None = None
    #: algorithm, key_id and value (base64): kcoral.protocol.receipts.signature_member
    signature: dict[str, str] | None = None


@dataclass(frozen=True, kw_only=True)
class TensorSpec(Document):
    shape: list[int]
    dtype: str


@dataclass(frozen=True, kw_only=True)
class WorkloadContract(Document):
    """One public workload: its parameters, what ``data`` holds for it, and its tolerance."""

    id: str
    timed: bool
    params: dict[str, Any]
    inputs: dict[str, TensorSpec]
    scalars: dict[str, Any]
    outputs: dict[str, TensorSpec]
    tolerance: dict[str, float]


@dataclass(frozen=True, kw_only=True)
class TaskContract(Document):
    """Everything a submitter may know of a task before submitting (``GET /v1/tasks/ID``, ``kcoral
    tasks show``): the holdout only by its count."""

    id: str
    version: str = ""
    description: str = ""
    device: str
    contract: str = ""
    timeout_s: float
    workloads: list[WorkloadContract]
    holdout_probes: int
    holdout: str
    tolerance: dict[str, float]
    tolerance_rule: str
    timing: dict[str, float | bool]
    timing_method: str
    score: str
    floor_ms: float | None = None
    max_speedup: float | None = None
    image: str
    python: str = ""
    #: distribution name -> version, in the image the submission runs in ({} when it could not be asked)
    packages: dict[str, str] = field(default_factory=dict)
    packages_error: str = ""
    #: a working solution.py to start from (the baseline's approach; ``kcoral init`` writes it)
    template: str = ""
    #: the file the template is written to, and the one a submission's worker imports
    submission_file: str = "solution.py"
    #: a pack problem's format (tasks.packs: kernelbench, gpumode); "" for a task of kcoral's own
    format: str = ""
    #: the GPU types the task runs on (its pack's gpu_types); empty: any
    gpu_types: list[str] = field(default_factory=list)


D = TypeVar("D", bound=Document)


class DocumentError(ValueError):
    """A report or receipt that is not what the server writes."""


def parse_report(data: str | bytes) -> EvalReport:
    return parse(EvalReport, data)


def parse_receipt(data: str | bytes) -> Receipt:
    return parse(Receipt, data)


def parse(model: type[D], data: object) -> D:
    """``data`` (JSON, or its parsed object) as the document ``model``; DocumentError when it is not what
    the server writes."""
    try:
        return from_data(model, parse_json(data) if isinstance(data, str | bytes) else data)
    except DataError as exc:
        raise DocumentError(f"{model.__name__}: {exc}") from None
