"""A slot's noise floor for a task: what its A/A calibration measured, folded into every report.

An A/A request evaluates the task's own template (the baseline's approach, server-supplied: never a
submission) as the candidate, on one slot with one core layout. Two things stay the same from one
request to the next on that slot, and no single request can see them:
- **the position's cost**: the candidate's calls are answered in its own container on its own core,
  the baseline's by a worker beside the supervisor. Where the lease has two cores, the baseline's
  calls never leave the supervisor's core while the candidate's cross to another (a sleeping virtual
  core woken, the inputs and outputs moved between caches): on the 2-core dev VM the template against
  itself measured 0.881-0.963x, a cost the request's own interval does not contain. The A/A requests
  measure it in ms per call (the candidate's net median less the baseline's: a fixed cost of where
  the call runs, not a share of the work), and every later report on that slot subtracts it from
  the candidate's calls (:func:`tasks.harness.stats.estimate`'s ``position_ms``), either sign.
- **the spread between requests**: each request draws new inputs, new processes, new cache and
  frequency states; the A/A speedups, once corrected, vary by more than one request's interval says.
  The floor is the half-width (in log) of a 95% prediction interval for one more A/A request,
  t(n-1) * sd * sqrt(1 + 1/n), with sd an upper confidence bound (the policy's ``confidence``, 0.9) on
  the spread rather than the few requests' own: a prediction interval covers 95% only on average over
  calibrations, and one calibration's spread can come out low by chance (on an H100, 9 requests in a
  row spread 0.062%, the 32 A/A requests after them 0.12%: the floor held 1.0 in 28 of 32). With the
  bound, at least 9 calibrations in 10 give a floor that covers 95% of requests, where requests
  are independent draws (a host whose noise changes over minutes is not: docs/eval.md). The spread holds each
  A/A request's own sampling noise already, so a report's interval is the floor, widened in quadrature
  only by what its own interval exceeds the A/A requests' typical own interval (their root mean square,
  each side): a request as steady as the calibration's gets the floor, a noisier one more
  (:func:`widen`). Runs stored before their own intervals were kept have none: with no typical own
  interval, the whole of a request's own is added.

A floor needs MIN_REQUESTS A/A requests no older than the policy's ``max_age_s``, of this task's content
and timing method, on the same slot and core layout (:class:`CalibrationKey`); the most recent ``keep``
are used (:class:`CalibrationPolicy`, an operator's ``calibration_NAME`` limits). Without one, the
report says its interval is the request's alone. Pure: the server stores the runs (runner.store) and
passes them here.
"""

from __future__ import annotations

import hashlib
import json
import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

from kcoral.tasks.documents import EvalReport, WorkloadRow
from kcoral.tasks.harness.schema import TimingMethod


class CalibrationKey(NamedTuple):
    """What a slot's A/A requests hold for: one slot and core layout (tasks.evaluate.calibration_slot),
    one task's content, and one timing method, the task's over the server's (an operator's ``timing_*``
    limits change what is measured: a floor from another method is not this one's)."""

    slot: str
    task: str
    task_sha256: str
    #: :func:`method_sha256` of the timing method the requests were measured with
    method_sha256: str


def method_sha256(method: TimingMethod) -> str:
    """A digest of every field of a timing method (which a calibration's key holds)."""
    return hashlib.sha256(json.dumps(asdict(method), sort_keys=True).encode()).hexdigest()


#: fewer A/A requests than this give no floor (sd of two is no estimate)
MIN_REQUESTS = 3
#: ``kcoral calibrate``'s default number of A/A requests
DEFAULT_REQUESTS = 5


@dataclass(frozen=True)
class CalibrationPolicy:
    """Which A/A requests a floor rests on: the server's (runner.limits.Limits.calibration; an operator
    sets them as ``calibration_keep`` and ``calibration_max_age_s``)."""

    #: the floor rests on at most this many of the latest A/A requests (t(n-1) falls from 2.57 at 6 to
    #: 2.09 at 20: more calibration requests, a narrower floor)
    keep: int = 20
    #: A/A requests older than this no longer count (a host changes: kernel, firmware, neighbours)
    max_age_s: float = 7 * 86400.0
    #: the floor takes the spread between requests at its upper bound at this confidence, not the few A/A
    #: requests' own (x1.51 at 9 requests, x1.29 at 20): this share of calibrations cover 95% of requests.
    #: At most 0.99: above ~0.996 the bound's approximation (:func:`sd_bound`) has no finite value at
    #: MIN_REQUESTS, and an infinite floor would make every interval [0, inf]
    confidence: float = 0.9
    #: while the server has nothing to run, one more A/A request of a calibrated task once its latest is
    #: this old, until the floor's ``keep`` requests are each this far apart (runner.recalibration; 0:
    #: never): the floor's requests then span the host's time, not the one window a burst sees
    every_s: float = 900.0

    def __post_init__(self) -> None:
        if not 0.5 <= self.confidence <= 0.99:
            said = f"{self.confidence!r} must be at least 0.5 and at most 0.99 (ratio)"
            raise ValueError(f"limit calibration_confidence: {said}")


#: Student's t, two-sided 95%, by degrees of freedom 1-30 (beyond: 1.96)
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def sd_bound(dof: int, confidence: float) -> float:
    """How many times a sample standard deviation with ``dof`` degrees of freedom the true one is at
    most, with probability ``confidence``: sqrt(dof / the chi-square quantile at 1 - confidence), the
    quantile by Wilson and Hilferty's cube-root approximation (within 1% of the exact factor from 3
    degrees of freedom, 4% wider at 2)."""
    if dof < 1:
        return math.inf
    z = statistics.NormalDist().inv_cdf(1.0 - confidence)
    root = 1.0 - 2.0 / (9.0 * dof) + z * math.sqrt(2.0 / (9.0 * dof))
    return math.sqrt(1.0 / root**3) if root > 0 else math.inf


def prediction_half_width(sd: float, n: int, confidence: float | None) -> float:
    """The floor's half-width (log) from ``n`` A/A requests spread ``sd``: a 95% prediction interval for
    one more, t(n-1) * sd * sqrt(1 + 1/n), the spread at its upper bound at ``confidence`` (None: the
    requests' own sd, no bound)."""
    bound = 1.0 if confidence is None else sd_bound(n - 1, confidence)
    return t975(n - 1) * sd * bound * math.sqrt(1 + 1 / n)


def t975(dof: int) -> float:
    """The two-sided 95% quantile of Student's t with ``dof`` degrees of freedom."""
    if dof < 1:
        return math.inf
    return _T975[dof - 1] if dof <= len(_T975) else 1.96


@dataclass(frozen=True)
class AaRun:
    """One A/A request's figures for one timed workload, as measured (no floor folded in)."""

    workload: str
    job: str
    at: float
    speedup: float
    #: the medians (ms) of the baseline's and the candidate's calls on the basis of the speedup: net, or
    #: with the protocol's cost where it dominated (:func:`_on_its_basis`)
    baseline_ms: float
    kernel_ms: float
    #: the request's own 95% interval of the speedup (None: stored before these were kept)
    speedup_lo: float | None = None
    speedup_hi: float | None = None

    def own_half_widths(self) -> tuple[float, float] | None:
        """The request's own interval as log half-widths below and above its speedup (None: not kept)."""
        if self.speedup_lo is None or self.speedup_hi is None or not 0 < self.speedup_lo <= self.speedup:
            return None
        if not self.speedup <= self.speedup_hi < math.inf:
            return None
        return math.log(self.speedup / self.speedup_lo), math.log(self.speedup_hi / self.speedup)


@dataclass(frozen=True)
class NoiseFloor:
    """What a slot's A/A requests say about a workload (see the module's docstring)."""

    workload: str
    requests: int
    #: ms each candidate call costs more than the baseline's for where it runs (negative: less)
    position_ms: float
    #: the standard deviation of the log speedups of the A/A requests, position corrected
    spread: float
    #: half-width (log) of a 95% prediction interval for one more A/A request, the spread at its upper
    #: bound (:func:`sd_bound`)
    half_width: float
    #: the A/A requests' median speedup, corrected (near 1.0 by construction)
    corrected: float
    first: float
    last: float
    jobs: tuple[str, ...] = ()
    #: the A/A requests' typical own interval: the root mean square of their log half-widths below and
    #: above (0.0: none of them kept one)
    own_down: float = 0.0
    own_up: float = 0.0

    def document(self) -> dict[str, Any]:
        return {**asdict(self), "jobs": list(self.jobs)}

    @property
    def percent(self) -> float:
        """The floor as a share of a speedup (the larger side of exp(+-half_width))."""
        return math.expm1(self.half_width)


#: a floor whose requests all ran within this many seconds saw one window of the host's time, which
#: ``kcoral calibrate``, ``kcoral doctor`` and every report resting on it say (on the dev VM 10 requests
#: within a minute spread 1.1%, the 40 after them 3.8-4.1%; 10 over 4 minutes 1.4%, and a noisier spell
#: right after them let a false gain through: docs/eval.md)
ONE_WINDOW_S = 600.0
#: a floor's requests said to span more than this (a year) are a server's nonsense: no span is shown
MAX_SPAN_S = 366 * 86400.0


def span_s(floor: dict[str, Any]) -> float | None:
    """Seconds from a floor document's first request to its last, or None where its times say nothing
    (an older server's floor has none; a NaN, an infinity, a reversed pair or text from a server)."""
    first, last = floor.get("first"), floor.get("last")
    if not isinstance(first, int | float) or not isinstance(last, int | float):
        return None
    if isinstance(first, bool) or isinstance(last, bool):  # a true or false from a server: no time
        return None
    seconds = float(last) - float(first)
    return seconds if 0 <= seconds <= MAX_SPAN_S else None


#: after a batch-mode workload's id: its batch-gain ratio's runs and floor (:func:`gain_key`)
GAIN_SUFFIX = " batch over one call"


def gain_key(workload: str) -> str:
    """Where a batch-mode workload's A/A batch-gain ratios are kept: its batch speedup over its per-call
    speedup, which the batch-gain check holds against its limit (tasks.batch_gain.batch_figures). Single
    calls draw between requests more than batches do, so the ratio of an honest request has a spread,
    and a slot may have a centre of its own, that the batch's floor does not say."""
    return workload + GAIN_SUFFIX


def aa_runs(report: EvalReport, job: str, at: float) -> list[AaRun]:
    """The A/A figures of a finished calibration request: one per timed workload that has a speedup, and
    one more per batch-mode workload with a per-call figure: its batch-gain ratio (:func:`gain_key`;
    the ratio stands as the speedup, on a baseline of 1)."""
    runs = [
        AaRun(row.id, job, at, row.speedup, *_on_its_basis(row), *(row.speedup_within or (None, None)))
        for row in report.workloads
        if row.speedup is not None and row.baseline_ms is not None and row.kernel_ms is not None
        if row.speedup > 0 and row.baseline_ms > 0
    ]
    for row in report.workloads:
        if row.speedup and row.speedup > 0 and row.per_call_speedup and row.per_call_speedup[0] > 0:
            gain = row.speedup / row.per_call_speedup[0]
            runs.append(AaRun(gain_key(row.id), job, at, gain, 1.0, 1.0 / gain))
    return runs


def _on_its_basis(row: WorkloadRow) -> tuple[float, float]:
    """The baseline's and the candidate's median ms on the scale the row's speedup is a ratio of: net, or
    where the protocol dominated (basis "raw") the calls as timed, net plus the protocol's median. The
    position a floor takes from them is then the ms the estimator takes off the candidate's calls on
    that basis: from the net medians, a raw-basis slot's position came out short by the protocol's
    share (the CPU demo on the 2-core dev VM: 0.19 ms taken off where ~0.4 ms was the cost, and the 8
    calibrated A/A requests after it 0.95-0.97x, none of their intervals holding 1.0)."""
    assert row.baseline_ms is not None and row.kernel_ms is not None
    extra = (row.protocol_ms or 0.0) if row.basis == "raw" else 0.0
    return row.baseline_ms + extra, row.kernel_ms + extra


def usable(runs: Iterable[AaRun], now: float, policy: CalibrationPolicy = CalibrationPolicy()) -> list[AaRun]:
    """The runs a floor may rest on: no older than the policy's max_age_s, its latest ``keep`` per
    workload."""
    fresh = sorted((r for r in runs if now - r.at <= policy.max_age_s), key=lambda r: r.at, reverse=True)
    kept: dict[str, list[AaRun]] = {}
    for r in fresh:
        if len(kept.setdefault(r.workload, [])) < policy.keep:
            kept[r.workload].append(r)
    return [r for rs in kept.values() for r in rs]


def floors(runs: Iterable[AaRun], now: float, policy: CalibrationPolicy = CalibrationPolicy()) -> dict[str, NoiseFloor]:
    """Each workload's floor from ``runs`` (those :func:`usable` at ``now`` under ``policy``); workloads
    with fewer than MIN_REQUESTS runs have none."""
    by: dict[str, list[AaRun]] = {}
    for r in usable(runs, now, policy):
        by.setdefault(r.workload, []).append(r)
    out = {}
    for workload, rs in by.items():
        floor = (gain_floor if workload.endswith(GAIN_SUFFIX) else noise_floor)(rs, policy.confidence)
        if floor is not None:
            out[workload] = floor
    return out


def noise_floor(runs: Sequence[AaRun], confidence: float = CalibrationPolicy.confidence) -> NoiseFloor | None:
    """One workload's floor from its A/A runs (None below MIN_REQUESTS), the spread between them taken at
    its upper bound at ``confidence``."""
    n = len(runs)
    if n < MIN_REQUESTS:
        return None
    # each run's candidate time as its speedup implies it: the estimator's ratio, on the baseline's scale
    implied = [r.baseline_ms / r.speedup for r in runs]
    position = statistics.median(k - r.baseline_ms for k, r in zip(implied, runs, strict=True))
    logs = []
    for k, r in zip(implied, runs, strict=True):
        corrected = k - position
        if corrected <= 0:  # a position cost as large as a call: nothing can be said on this slot
            return None
        logs.append(math.log(r.baseline_ms / corrected))
    owns = [h for h in (r.own_half_widths() for r in runs) if h is not None]
    return _spread_of(runs, logs, confidence, position, _rms([d for d, _ in owns]), _rms([u for _, u in owns]))


def gain_floor(runs: Sequence[AaRun], confidence: float = CalibrationPolicy.confidence) -> NoiseFloor | None:
    """A batch-mode workload's batch-gain ratios from its A/A runs (None below MIN_REQUESTS): their
    median as ``corrected`` (an honest request's ratio on this slot) and the spread of their logs as the
    floor, at its upper bound at ``confidence``; no position (a ratio has no ms)."""
    n = len(runs)
    if n < MIN_REQUESTS:
        return None
    return _spread_of(runs, [math.log(r.speedup) for r in runs], confidence)


def _spread_of(
    runs: Sequence[AaRun],
    logs: list[float],
    confidence: float,
    position_ms: float = 0.0,
    own_down: float = 0.0,
    own_up: float = 0.0,
) -> NoiseFloor:
    """The floor of ``runs`` whose log figures are ``logs``: their spread, its prediction half-width at
    ``confidence``, their median."""
    sd = statistics.stdev(logs)
    return NoiseFloor(
        workload=runs[0].workload,
        requests=len(runs),
        position_ms=position_ms,
        spread=sd,
        half_width=prediction_half_width(sd, len(runs), confidence),
        corrected=math.exp(statistics.median(logs)),
        first=min(r.at for r in runs),
        last=max(r.at for r in runs),
        jobs=tuple(r.job for r in runs),
        own_down=own_down,
        own_up=own_up,
    )


def _rms(xs: Sequence[float]) -> float:
    return math.sqrt(statistics.fmean(x * x for x in xs)) if xs else 0.0


def assumed(workload: str, ratio: float) -> NoiseFloor:
    """The floor a slot with no A/A calibration of the task is given (the method's
    ``uncalibrated_floor``): no position taken off, the noise between requests +-``ratio``, and no typical
    own interval (so the request's own is added whole, in quadrature). ``requests`` 0 tells it apart."""
    half = math.log1p(ratio)
    return NoiseFloor(workload, 0, 0.0, half / 2.0, half, 1.0, 0.0, 0.0)


def widen(speedup: float, lo: float, hi: float, floor: NoiseFloor) -> tuple[float, float]:
    """A request's interval [lo, hi] around ``speedup`` with the slot's floor: each side (log scale) the
    floor's half-width, and in quadrature whatever the request's own side exceeds the A/A requests'
    typical own side (the floor's spread holds their own noise already; only this request's extra
    noise is new). Never narrower than the request's own interval."""
    down = math.log(speedup / lo)
    up = math.log(hi / speedup)
    down = math.sqrt(floor.half_width**2 + max(0.0, down**2 - floor.own_down**2))
    up = math.sqrt(floor.half_width**2 + max(0.0, up**2 - floor.own_up**2))
    return min(lo, speedup * math.exp(-down)), max(hi, speedup * math.exp(up))
