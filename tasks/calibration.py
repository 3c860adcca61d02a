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
  t(n-1) * sd * sqrt(1 + 1/n), and a report's interval is its own widened by it in quadrature.

A floor needs MIN_REQUESTS A/A requests no older than MAX_AGE_S, of this task's content, on the same
slot and core layout; the most recent KEEP are used. Without one, the report says its interval is
the request's alone. Pure: the server stores the runs (runner.store) and passes them here.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from kcoral.tasks.documents import EvalReport

#: fewer A/A requests than this give no floor (sd of two is no estimate)
MIN_REQUESTS = 3
#: the floor rests on at most this many of the latest A/A requests
KEEP = 10
#: A/A requests older than this no longer count (a host changes: kernel, firmware, neighbours)
MAX_AGE_S = 7 * 86400.0
#: ``kcoral calibrate``'s default number of A/A requests
DEFAULT_REQUESTS = 5

#: Student's t, two-sided 95%, by degrees of freedom 1-30 (beyond: 1.96)
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


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
    #: the net medians (ms) of the baseline's and the candidate's calls
    baseline_ms: float
    kernel_ms: float


@dataclass(frozen=True)
class NoiseFloor:
    """What a slot's A/A requests say about a workload (see the module's docstring)."""

    workload: str
    requests: int
    #: ms each candidate call costs more than the baseline's for where it runs (negative: less)
    position_ms: float
    #: the standard deviation of the log speedups of the A/A requests, position corrected
    spread: float
    #: half-width (log) of a 95% prediction interval for one more A/A request
    half_width: float
    #: the A/A requests' median speedup, corrected (near 1.0 by construction)
    corrected: float
    first: float
    last: float
    jobs: tuple[str, ...] = ()

    def document(self) -> dict[str, Any]:
        return {**asdict(self), "jobs": list(self.jobs)}

    @property
    def percent(self) -> float:
        """The floor as a share of a speedup (the larger side of exp(+-half_width))."""
        return math.expm1(self.half_width)


def aa_runs(report: EvalReport, job: str, at: float) -> list[AaRun]:
    """The A/A figures of a finished calibration request: one per timed workload that has a speedup."""
    return [
        AaRun(row.id, job, at, row.speedup, row.baseline_ms, row.kernel_ms)
        for row in report.workloads
        if row.speedup is not None and row.baseline_ms is not None and row.kernel_ms is not None
        if row.speedup > 0 and row.baseline_ms > 0
    ]


def usable(runs: Iterable[AaRun], now: float) -> list[AaRun]:
    """The runs a floor may rest on: no older than MAX_AGE_S, the latest KEEP per workload."""
    fresh = sorted((r for r in runs if now - r.at <= MAX_AGE_S), key=lambda r: r.at, reverse=True)
    kept: dict[str, list[AaRun]] = {}
    for r in fresh:
        if len(kept.setdefault(r.workload, [])) < KEEP:
            kept[r.workload].append(r)
    return [r for rs in kept.values() for r in rs]


def floors(runs: Iterable[AaRun], now: float) -> dict[str, NoiseFloor]:
    """Each workload's floor from ``runs`` (those :func:`usable` at ``now``); workloads with fewer
    than MIN_REQUESTS runs have none."""
    by: dict[str, list[AaRun]] = {}
    for r in usable(runs, now):
        by.setdefault(r.workload, []).append(r)
    out = {}
    for workload, rs in by.items():
        floor = noise_floor(rs)
        if floor is not None:
            out[workload] = floor
    return out


def noise_floor(runs: Sequence[AaRun]) -> NoiseFloor | None:
    """One workload's floor from its A/A runs (None below MIN_REQUESTS)."""
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
    sd = statistics.stdev(logs)
    return NoiseFloor(
        workload=runs[0].workload,
        requests=n,
        position_ms=position,
        spread=sd,
        half_width=t975(n - 1) * sd * math.sqrt(1 + 1 / n),
        corrected=math.exp(statistics.median(logs)),
        first=min(r.at for r in runs),
        last=max(r.at for r in runs),
        jobs=tuple(r.job for r in runs),
    )


def widen(speedup: float, lo: float, hi: float, half_width: float) -> tuple[float, float]:
    """A request's interval [lo, hi] around ``speedup`` widened by a floor's log half-width, each side
    in quadrature (log scale)."""
    down = math.sqrt(math.log(speedup / lo) ** 2 + half_width**2)
    up = math.sqrt(math.log(hi / speedup) ** 2 + half_width**2)
    return speedup * math.exp(-down), speedup * math.exp(up)
