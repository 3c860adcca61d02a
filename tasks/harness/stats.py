"""Small statistics for timing samples (pure Python: no numpy or torch needed)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from kcoral.tasks.harness.schema import TimingMethod


def median(xs: Sequence[float]) -> float:
    return float(statistics.median(xs))


def median_interval(xs: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """The median of ``xs`` and a distribution-free interval for it: the order statistics x(l+1) and
    x(n-l) (1-based, ``xs`` sorted), l the largest count with P(Binomial(n, 1/2) <= l) <= (1-level)/2.
    It covers the true median with probability >= level for any continuous distribution of
    independent samples; with too few samples for that (n <= 5 at 0.95) it is the whole range."""
    s = sorted(xs)
    n = len(s)
    if n == 0:
        return math.nan, math.nan, math.nan
    tail, cum, lower = (1 - level) / 2, 0.0, -1
    log_half_n = n * math.log(0.5)
    for i in range(n // 2):
        cum += math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + log_half_n)
        if cum > tail:
            break
        lower = i
    j = max(lower, 0)  # x(l+1) is s[l]; with no such l, the whole range
    return float(statistics.median(s)), s[j], s[n - 1 - j]


#: each half of a measurement needs this many blocks of its own before its interval counts
MIN_HALF = 5


def min_samples(level: float = 0.95) -> int:
    """The fewest samples whose distribution-free median interval (:func:`median_interval`) reaches
    ``level``: with n samples, all n fall on one side of the median with probability 2 * 0.5**n, which
    must be at most 1 - level (6 at 0.95). Fewer give no interval at all: their whole range is not one
    (from a single sample, a width of 0)."""
    n = 1
    while 2 * 0.5**n > 1 - level:
        n += 1
    return n


#: the halves' speedups differ by more than this (as a ratio) before a report says they drifted apart
DRIFT_NOTE_RATIO = 1.05


def too_disturbed(marks: Sequence[bool], limit: float = TimingMethod.disturbed_limit) -> bool:
    """Whether more than ``limit`` (TimingMethod.disturbed_limit) of these iterations were disturbed
    (the supervisor samples on; the report calls the workload unmeasured)."""
    return sum(marks) > limit * len(marks)


Basis = Literal["net", "raw"]


@dataclass(frozen=True)
class Speedup:
    """A speedup with its interval, what each time-ordered half of the blocks measured alone, and how
    it was taken (:func:`estimate`)."""

    speedup: float
    lo: float
    hi: float
    halves: tuple[float, float] | None = None
    #: "net": each call less its iteration's empty call; "raw": the calls as timed (the protocol dominated)
    basis: Basis = "net"
    #: the pairs of opposite-order iterations the speedup is the median of
    blocks: int = 0
    #: the iterations left out as disturbed
    disturbed: int = 0
    #: the protocol's fixed cost as a share of a call: the median empty call over the smaller median raw
    #: call of the two sides (over TimingMethod.protocol_dominant: the raw basis)
    protocol_share: float = 0.0

    @property
    def drifted(self) -> bool:
        """The halves disagree by more than DRIFT_NOTE_RATIO."""
        if self.halves is None or min(self.halves) <= 0:
            return False
        return max(self.halves) / min(self.halves) > DRIFT_NOTE_RATIO

    @property
    def relative_half_width(self) -> float:
        """How far the interval reaches from the speedup, as a share of it (inf when unmeasured)."""
        if not (self.speedup > 0 and math.isfinite(self.lo) and math.isfinite(self.hi)):
            return math.inf
        return max(self.hi - self.speedup, self.speedup - self.lo) / self.speedup


def estimate(
    baseline_ms: Sequence[float],
    kernel_ms: Sequence[float],
    null_ms: Sequence[float],
    disturbed: Sequence[bool] | None = None,
    level: float = 0.95,
    position_ms: float = 0.0,
    protocol_dominant: float = TimingMethod.protocol_dominant,
) -> Speedup:
    """The speedup of the candidate over the baseline from the supervisor's RAW call times (the
    protocol's cost included): the i-th entries are iteration i, which timed baseline, candidate,
    empty call when i is even and candidate, baseline, empty call when it is odd. ``disturbed``: per
    iteration, whether the judge's side was disturbed while it ran (missing entries: not).
    ``position_ms``: what a call costs more where the candidate runs than where the baseline does, as
    the slot's A/A calibration measured it (tasks.calibration): taken off each of the candidate's calls.

    1. Disturbed iterations are left out, both of their calls (only the trusted side decides which).
    2. The basis: each call less the same iteration's empty call ("net"), unless the protocol
       dominates (the median empty call above ``protocol_dominant`` of the smaller side's median raw
       call): then the raw calls ("raw"), a ratio pulled towards 1, never a gain the subtraction made.
    3. Iterations 2k and 2k+1 (one of each order) form a block; its ratio is the geometric mean of
       their ratios, so a position effect (the first call of an iteration slower, or faster) and a
       host whose speed drifts (the later call slower) cancel within it. An iteration whose partner
       was left out is left out. A side not above zero ranks at the limit: the candidate's gives inf,
       the baseline's 0; a block with no ratio (neither side above zero) or with both limits has none.
    4. The speedup is the median of the blocks' ratios with :func:`median_interval`; from fewer blocks
       than :func:`min_samples` the interval is [0, inf] (it could not reach the level). A host whose
       speed changed for one side in the middle of a measurement moves the time-ordered halves of the
       blocks apart: the interval always covers both halves' own speedups, and when the halves'
       intervals do not even meet, both halves' intervals whole (:func:`covering_halves`).
    """
    # Why per iteration, then per block: on the H200 the calls of one iteration share most of their
    # noise (the baseline's and the candidate's times correlate 0.5-0.85, and each drifts: lag-1
    # autocorrelation 0.3-0.7), which a ratio cancels, while the ratios of one iteration to the next are
    # independent (lag-1 within +-0.2) but for their order: the two orders measured apart by up to 2%
    # within a request, either way, and a median over the two modes spans the gap between them.
    n = min(len(baseline_ms), len(kernel_ms), len(null_ms))
    marks = list(disturbed or ())
    out = [i < len(marks) and bool(marks[i]) for i in range(n)]
    kept = [i for i in range(n) if not out[i]]
    dropped = n - len(kept)
    if not kept:
        return Speedup(math.nan, math.nan, math.nan, disturbed=dropped, protocol_share=math.nan)
    null = median([null_ms[i] for i in kept])
    raw_b, raw_c = median([baseline_ms[i] for i in kept]), median([kernel_ms[i] for i in kept])
    share = null / min(raw_b, raw_c) if min(raw_b, raw_c) > 0 else math.inf
    basis: Basis = "raw" if share > protocol_dominant else "net"

    def ratio(i: int) -> float | None:
        if out[i]:
            return None
        cost = null_ms[i] if basis == "net" else 0.0
        return _ratio(baseline_ms[i] - cost, kernel_ms[i] - cost - position_ms)

    blocks = [r for k in range(n // 2) if (r := _block(ratio(2 * k), ratio(2 * k + 1))) is not None]
    s, lo, hi = median_interval(blocks, level)
    if len(blocks) < min_samples(level):  # no interval yet: unbounded (never "stable", never scored)
        lo, hi = 0.0, math.inf
    return covering_halves(Speedup(s, lo, hi, None, basis, len(blocks), dropped, share), blocks, level)


def covering_halves(pooled: Speedup, blocks: list[float], level: float) -> Speedup:
    """``pooled`` (the estimate over every block, in time order) with its interval made to cover the
    time-ordered halves' own speedups, and, when the halves' intervals do not even meet, both halves'
    intervals whole; unchanged from fewer than 2 x MIN_HALF blocks."""
    if len(blocks) < 2 * MIN_HALF:
        return pooled
    k = len(blocks) // 2
    first, second = median_interval(blocks[:k], level), median_interval(blocks[k:], level)
    lo, hi = pooled.lo, pooled.hi
    if first[2] < second[1] or second[2] < first[1]:
        lo, hi = min(lo, first[1], second[1]), max(hi, first[2], second[2])
    else:
        lo, hi = min(lo, first[0], second[0]), max(hi, first[0], second[0])
    return replace(pooled, lo=lo, hi=hi, halves=(first[0], second[0]))


def others_slack(shared_ms: float, kernel_ms: Sequence[float], batch: int, basis: Basis, net_ms: float) -> float:
    """How many times faster the candidate's calls may have been than measured: other work ran on its core
    for ``shared_ms`` during its timed calls (tasks.harness.interference; under the method's limits, else
    the workload is not scored), and all of it may have delayed them, never the baseline's. The report
    raises the interval's upper bound by it, never the lower: the host's interference can hide a gain,
    never make one. A share of the candidate's raw timed calls (``kernel_ms`` per iteration, each a call
    or a batch's time over its ``batch`` calls), and on the net basis of the net calls (median
    ``net_ms``: the same ms a larger share of less); inf when it could be all of their time. On the
    2-core dev VM an idle A/A request with 28 ms of it (8.9% of its calls' windows) measured 0.875x
    [0.832, 0.920]: x1.10 makes it [0.832, 1.014]."""
    if shared_ms <= 0:
        return 1.0
    raw = sum(kernel_ms) * max(batch, 1)
    share = shared_ms / raw if raw > 0 else 1.0
    if basis == "net":
        share *= median(kernel_ms) / net_ms if net_ms > 0 else math.inf
    return 1 / (1 - share) if share < 1 else math.inf


def _ratio(base: float, cand: float) -> float | None:
    """One iteration's speedup; a side not above zero (net of the protocol's cost: the call too short to
    time) ranks as the ratio's limit; neither above zero: none."""
    if cand > 0:
        return base / cand if base > 0 else 0.0
    return math.inf if base > 0 else None


def _block(first: float | None, second: float | None) -> float | None:
    """A block's ratio: the geometric mean of its two iterations' ratios, a limit (0 or inf) deciding it;
    none when either iteration has none or the two reach opposite limits."""
    if first is None or second is None:
        return None
    pair = {first, second}
    if 0.0 in pair:
        return None if math.inf in pair else 0.0
    if math.inf in pair:
        return math.inf
    return math.sqrt(first * second)


def geomean(xs: Sequence[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def geomean_ci(cis: Sequence[tuple[float, float, float]]) -> tuple[float, float, float]:
    """Geometric mean of speedups; the interval is the geometric mean of the bounds (conservative)."""
    return geomean([c[0] for c in cis]), geomean([c[1] for c in cis]), geomean([c[2] for c in cis])


def net_samples(raw: Sequence[float], null: Sequence[float]) -> list[float]:
    """Each call's time less the protocol's fixed cost measured in the same iteration (the report's
    figures: the speedup itself is :func:`estimate`'s)."""
    return [r - n for r, n in zip(raw, null, strict=False)]


#: two measurements whose intervals both lie within this ratio of each other are the same speed
SAME_WITHIN = 1.01


def compare_intervals(lo: float, hi: float, other_lo: float = 1.0, other_hi: float = 1.0) -> str:
    """The words of a robust comparison of an interval [lo, hi] against another (default: the
    baseline's 1.0): "faster" or "slower" when the intervals do not overlap, "same" when every value
    of each lies within SAME_WITHIN of every value of the other, else "ambiguous" (more samples, or a
    quieter host, would be needed to tell). Never from point values alone."""
    if lo > other_hi:
        return "faster"
    if hi < other_lo:
        return "slower"
    if max(hi, other_hi) <= SAME_WITHIN * min(lo, other_lo):
        return "same"
    return "ambiguous"
