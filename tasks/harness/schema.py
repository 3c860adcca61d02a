"""The documents of an evaluation that cross a process boundary, typed and validated. Stdlib only:
the supervisor imports this inside its container, the server reads the same types back.

The server writes a ``CaseFile`` (the judge's cases and the sample key) for the supervisor, which
reads it with ``parse_cases``; the supervisor (trusted) writes a ``SupervisorResult``, which the
server reads with ``parse_result``. Both are read as every typed document is
(:mod:`kcoral.protocol.typeddata`), with the limits declared on the fields here: every type, size and
encoding checked, so a damaged or hostile document is refused whole (``DataError``, which names the
first place that is wrong) instead of being half-read.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum
from typing import Annotated, Any, ClassVar

from kcoral.protocol.typeddata import Bound, DataError, from_data, parse_json

SCHEMA_VERSION = 1
#: bytes the server reads of a supervisor result
MAX_RESULT_BYTES = 16 << 20
MAX_TEXT = 12000  # a reason: a check's full traceback fits
MAX_SAMPLES = 10000
MAX_PHASES = 200
MAX_CASES = 1000
#: what a task's callable may say of itself in a worker's answer to its setup (``state``), for the
#: supervisor to check (a KernelBench ModelNew's parameters: tasks.packs.kernelbench.state_report)
STATE_ATTRIBUTE = "__kcoral_state__"

#: a reason, a name: cut to MAX_TEXT characters
Text = Annotated[str, Bound(max_chars=MAX_TEXT)]
#: one figure per iteration
Figures = Annotated[list[float], Bound(max_items=MAX_SAMPLES)]
Flags = Annotated[list[bool], Bound(max_items=MAX_SAMPLES)]
#: a call's time: above zero
Samples = Annotated[list[Annotated[float, Bound(positive=True)]], Bound(max_items=MAX_SAMPLES)]


class Phase(StrEnum):
    HOLDOUT = "holdout"
    WORKLOAD = "workload"


@dataclass
class Case:
    """One case: its opaque id, the recipe of its inputs, and how it is judged."""

    STRICT: ClassVar[bool] = True

    id: Text
    phase: Phase
    workload: Text
    params: dict[str, Any]
    seed: int
    timed: bool
    tolerance: dict[str, float]


@dataclass(frozen=True)
class TimingMethod:
    """How the supervisor measures timed cases and judges the candidate's CPU use: the server's
    defaults (these, or an operator's: runner.limits.Limits.eval_timing, whose table says what each
    field means) with the task manifest's ``timing`` over them (tasks.cases.timing_method). The case
    file carries every field; the supervisor defaults none (``COMPLETE``: a missing one is refused)."""

    STRICT: ClassVar[bool] = True
    COMPLETE: ClassVar[bool] = True

    warmup_s: float = 1.0
    min_reps: int = 10
    max_reps: int = 300
    budget_s: float = 30.0
    interval_target: float = 0.01
    #: written before every call, inside its timed window after its inputs (the empty call's too, so the
    #: net time leaves it out), so that no call finds the data of the one before it in a cache. Past the
    #: last-level cache a CPU task's inputs are evicted as well; but the flush's own time then dominates a
    #: short call and the speedup falls back to the raw ratio, which shrinks every difference towards 1.0:
    #: the CPU demo flushes 16 MiB (under the dev VM's 32 MiB L3) for that (bench/results/flush-dev-vm)
    flush_bytes: int = 128 << 20
    idle_cpu_ms: float = 0.25
    idle_cpu_share: float = 0.10
    quiet_probe_ms: float = 0.25
    noisy_budget_s: float = 120.0
    #: ... and up to this many times max_reps iterations (tasks.harness.sampling)
    noisy_reps: int = 10
    scorable_ratio: float = 2.0
    connect_timeout_s: float = 180.0
    call_timeout_s: float = 300.0
    #: seconds before the evaluation's deadline that the supervisor keeps for ending (its result, the
    #: report): a call too slow to be measured before then FAILs its case at once ("too slow")
    deadline_margin_s: float = 5.0
    disturbed_ms: float = 0.1
    disturbed_share: float = 0.02
    hot_c: float = 80.0
    cool_s: float = 60.0
    buffer_sets: int = 4
    batch: int = 0
    graph: bool = False
    # --- the judge's rules: what the figures above must meet to be scored (tasks.report) ---
    #: in the batch mode, the per-call measurement that follows the batches: this many iterations (20
    #: pairs: an interval of its own, against which a batch whose calls ran together far faster than
    #: apart shows)
    per_call_checks: int = 40
    #: a measurement with more than this share of its iterations disturbed (tasks.harness.interference)
    #: is not one: what is left would be a selection of the moments the judge's side was quiet, while the
    #: candidate's were not chosen (an estimate against it). The supervisor samples on (noisy_budget_s)
    #: while it is over; past it the workload is unmeasured and the evaluation inconclusive
    disturbed_limit: float = 0.5
    #: the protocol's fixed cost (the median empty call) dominates above this share of the faster side's
    #: median raw call: the speedup is then the raw ratio (pulled towards 1), not the net one, which
    #: subtracting a cost as large as the kernel would amplify any bias and noise of the calls into (on
    #: a loaded host: 7.94 ms of protocol, a structural 25% raw difference, 14.64 against 11.36 ms, read
    #: as ~2x net)
    protocol_dominant: float = 0.5
    #: a timed workload whose candidate calls ran beside others' work on the candidate's core for more
    #: than this share of their time is not scored (tasks.harness.interference): the host slowed one side
    #: only. Idle, this 2-core VM's other processes took 0-2% of it; one busy loop beside the demo, ~60%
    shared_core_share: float = 0.1
    #: ... and only past this many ms in all: the core's time is read in clock ticks of 10 ms, and each
    #: call's window also holds the writing of its inputs, while the candidate's core is idle and the
    #: host's own processes may use it, so over a short measurement (the CPU demo's candidate calls take
    #: ~0.2 s in all) a few ticks of them would pass the share alone: a quiet CI run once saw 52 ms (24%)
    #: so; one busy loop beside the demo gives 240-310 ms
    shared_core_ms: float = 100.0
    #: a timed workload whose speedup interval spans more than this ratio (hi / lo) cannot be scored: the
    #: evaluation is inconclusive, not failed. Quiet runs of the baseline's own code on a 2-core CI host
    #: give intervals up to ~x1.6 wide; the supervisor samples on until scorable_ratio
    #: (bench/results/eval-spread-loaded.json)
    inconclusive_ratio: float = 3.0
    #: in the batch mode, a batch speedup whose interval lies wholly above the per-call one's by more
    #: than this ratio is flagged: calls that run that much faster together than apart (for the candidate
    #: more than for the baseline) did work of later calls ahead, or together, which the batch's clock
    #: cannot tell from speed. Hiding launch gaps moves an honest submission's speedup by far less on
    #: tasks that choose the batch mode (calls of milliseconds), and then usually down: the baseline's
    #: gaps hide too
    batch_gain_limit: float = 1.10
    #: the noise between requests assumed where the slot has no A/A calibration of the task (a ratio:
    #: 0.11 is +-11%), folded into the interval as a calibration's floor would be (tasks.calibration.assumed):
    #: one request alone cannot see where its sides run nor what differs between requests. On the H200, 38
    #: timed workloads of 37 pack problems, each against its own reference on an uncalibrated slot, spread
    #: sd 5.5% (a 95% prediction of +-11.3%), 6 of their own intervals wholly above 1.0
    #: (bench/results/gpu-host-issue32/h200-2026-12-05). 0: the request's interval alone
    uncalibrated_floor: float = 0.11

    def __post_init__(self) -> None:
        """A method that cannot be followed is refused (DataError, naming the setting), wherever it was
        set: an operator's ``timing_NAME``, a task's manifest, a case file."""
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, bool) and isinstance(value, int | float) and value < 0:
                raise DataError(f.name, f"{value!r} is negative")
        if self.min_reps > self.max_reps:
            raise DataError("min_reps", f"{self.min_reps} is above max_reps {self.max_reps}")
        for name in ("idle_cpu_share", "disturbed_share", "disturbed_limit", "shared_core_share", "uncalibrated_floor"):
            if not 0 <= getattr(self, name) <= 1:
                raise DataError(name, f"{getattr(self, name)!r} is a share: from 0 to 1")
        for name in ("scorable_ratio", "inconclusive_ratio", "batch_gain_limit"):
            if not getattr(self, name) >= 1:
                raise DataError(name, f"{getattr(self, name)!r} is a ratio of at least 1")


@dataclass
class CaseFile:
    """The judge's case file: holdout probes first, then the workloads, and the per-request key
    every timed sample's inputs are drawn from. Only the supervisor ever reads it."""

    STRICT: ClassVar[bool] = True

    task: Text
    device: Text
    cases: Annotated[list[Case], Bound(max_items=MAX_CASES)]
    sample_key: Text
    timing: TimingMethod
    #: when the evaluation's time limit ends (Unix time, the host's clock; 0: not said): a measurement
    #: the submission's calls cannot finish by then stops early, too slow (tasks.harness.supervisor)
    deadline: float = 0.0

    def to_json(self) -> str:
        return json.dumps(asdict(self))


def parse_cases(data: bytes) -> CaseFile:
    """The case file, every field checked (DataError names the first that is wrong)."""
    return from_data(CaseFile, parse_json(data))


class Outcome(StrEnum):
    """A case's verdict. The holdout reports PASS or FAIL only."""

    PASS = "PASS"
    FAIL = "FAIL"
    FLAKY = "FLAKY"
    ERROR = "ERROR"


@dataclass
class Sampled:
    """One measurement of a timed case, every figure from the supervisor's clock (milliseconds per call)."""

    #: raw call times, the protocol's fixed cost included; baseline and candidate interleaved
    baseline_ms: Samples
    kernel_ms: Samples
    #: the protocol's fixed cost: the same call sequence with a call that does nothing
    null_ms: Samples
    stopped_by: Text = ""
    warmup_calls: int = 0
    #: the candidate container's CPU use between two of its calls (median ms per gap; total as a share of
    #: the baseline's total call time), and while its inputs were written before a call began
    idle_cpu_ms: float = 0.0
    idle_cpu_share: float = 0.0
    early_cpu_ms: float = 0.0
    early_cpu_share: float = 0.0
    #: others' work on the candidate's core while its calls ran (tasks.harness.callwatch: the time it held
    #: them up where the kernel says, else its time there): ms in all, and as a share of those calls' time
    #: (0 where the candidate has no core of its own)
    shared_core_ms: float = 0.0
    shared_core_share: float = 0.0
    #: a first measurement raised a flag, so these figures are a second, independent one
    remeasured: bool = False
    #: per iteration (the i-th baseline, candidate and null call), what the kernel billed to nobody on the
    #: judge's side while that iteration's trusted calls ran: milliseconds the trusted processes waited for a
    #: CPU, and interrupt/softirq time on the judge's cores (tasks.harness.interference). An iteration above
    #: the method's limit is disturbed: the estimate leaves it out (tasks.harness.stats)
    judge_wait_ms: Figures = field(default_factory=list)
    disturbed: Flags = field(default_factory=list)
    #: per iteration on a GPU (NVML, tasks.harness.gpuclock): its lowest SM clock (MHz), its highest
    #: temperature (C), and whether it slowed itself for heat or power (such an iteration is disturbed)
    sm_clock_mhz: Figures = field(default_factory=list)
    temperature_c: Figures = field(default_factory=list)
    throttled: Flags = field(default_factory=list)
    #: seconds the GPU was let cool before sampling (TimingMethod.hot_c)
    cooled_s: float = 0.0
    #: calls per timed batch (TimingMethod.batch): each figure above is a batch's time over this many
    #: calls; 0: every call timed on its own
    batch: int = 0
    #: the method's calls per batch where the GPU's free memory held fewer (tasks.harness.memoryfit):
    #: ``batch`` is then what it held (0: every call timed on its own); 0 where the batch is the method's
    batch_asked: int = 0
    #: the batches were replayed CUDA graphs, each captured once (TimingMethod.graph)
    graph: bool = False


@dataclass
class Timing(Sampled):
    """A timed case's measurement, and in batch mode the per-call one beside it."""

    #: in batch mode, the same sides timed one call at a time in the same request (fewer iterations):
    #: what the report holds the batch's speedup against (tasks.report). A measurement of its own, with
    #: no per-call one inside (a document's deeper one is not read)
    per_call: Sampled | None = None


@dataclass
class CaseResult:
    id: Text
    outcome: Outcome
    reason: Text = ""
    #: per output: rms_ratio, max_abs_err, failed_elements
    stats: dict[Text, dict[Text, float]] = field(default_factory=dict)
    timing: Timing | None = None
    #: what the submission did that its verdict does not hold against it (it wrote into its inputs)
    warnings: Annotated[list[Text], Bound(max_items=10)] = field(default_factory=list)


@dataclass
class SupervisorResult:
    cases: Annotated[list[CaseResult], Bound(max_items=MAX_CASES)]
    #: what the supervisor saw that makes its measurements untrustworthy (the evaluation fails)
    interference: Annotated[list[Text], Bound(max_items=100)] = field(default_factory=list)
    #: how the candidate's CPU use was watched ("cgroup v2", ...)
    cpu_watch: Text = ""
    #: seconds the supervisor spent per phase, in order: "start" (its own start, the baseline's
    #: worker, the candidate's import), "holdout" (all probes together), "check WORKLOAD", "timing WORKLOAD"
    #: (the first MAX_PHASES of them are read)
    phases: Annotated[dict[Annotated[str, Bound(max_chars=200)], float], Bound(keep_items=MAX_PHASES)] = field(
        default_factory=dict
    )
    version: int = SCHEMA_VERSION

    def to_json(self) -> str:
        return json.dumps(valid_unicode(asdict(self)), allow_nan=False)


def valid_unicode(value: Any) -> Any:
    """``value`` (JSON's kinds) with each string valid Unicode: a lone surrogate, which a candidate's error
    text may hold (Python's JSON decodes "\\ud800" into one), written as its escape, so the server reads
    the result rather than refusing it whole."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {valid_unicode(k): valid_unicode(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [valid_unicode(v) for v in value]
    return value


def parse_result(data: bytes) -> SupervisorResult:
    """The supervisor's result, at most MAX_RESULT_BYTES, every field checked (DataError names the first
    that is wrong)."""
    if len(data) > MAX_RESULT_BYTES:
        raise DataError("", f"a result of {len(data)} bytes is over {MAX_RESULT_BYTES}")
    doc = parse_json(data)
    if not isinstance(doc, dict):
        raise DataError("", "must be an object")
    version = doc.get("version")
    if type(version) is not int or version != SCHEMA_VERSION:  # not True: True == 1 in Python
        raise DataError("version", f"{version!r}, expected {SCHEMA_VERSION}")
    return from_data(SupervisorResult, doc)
