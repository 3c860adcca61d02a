"""Small statistics for timing samples (pure Python: no numpy or torch needed)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


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


def ratios(base: Sequence[float], cand: Sequence[float]) -> list[float]:
    """Each iteration's speedup, base[i] / cand[i], in the order taken. A side whose time is not above
    zero (net of the protocol's cost: the call too short to time) ranks as the ratio's limit: the
    candidate's gives inf, the baseline's 0; an iteration where neither is above zero has no ratio."""
    out = []
    for b, c in zip(base, cand, strict=False):
        if c > 0:
            out.append(b / c if b > 0 else 0.0)
        elif b > 0:
            out.append(math.inf)
    return out


#: each half of a measurement needs this many samples of its own before its interval counts
MIN_HALF = 5
#: the halves' speedups differ by more than this (as a ratio) before a report says they drifted apart
DRIFT_NOTE_RATIO = 1.05


@dataclass(frozen=True)
class Speedup:
    """A speedup with its interval, and what each time-ordered half of the samples measured alone."""

    speedup: float
    lo: float
    hi: float
    halves: tuple[float, float] | None = None

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


def speedup_interval(base: Sequence[float], cand: Sequence[float], level: float = 0.95) -> Speedup:
    """The speedup of paired samples (the same iteration's baseline and candidate calls, in the order
    they were taken): the median of the per-iteration ratios, with :func:`median_interval`.

    Why per iteration: on the H200 the three calls of one iteration share most of their noise (the
    baseline's and the candidate's times correlate 0.5-0.85, and each drifts: lag-1 autocorrelation
    0.3-0.7), while the ratios of one iteration to the next are independent (lag-1 within +-0.2), so
    a ratio cancels what the calls share and the interval's independence assumption holds for it.

    A host whose speed changed for one side in the middle of a measurement moves the time-ordered
    halves apart. The interval always covers both halves' own speedups; when the halves' intervals do
    not even meet (the speed did change), it covers both halves' intervals whole, so it never claims
    a precision, or a gain, that the measurement did not have."""
    r = ratios(base, cand)
    s, lo, hi = median_interval(r, level)
    if len(r) < 2 * MIN_HALF:
        return Speedup(s, lo, hi)
    k = len(r) // 2
    first, second = median_interval(r[:k], level), median_interval(r[k:], level)
    if first[2] < second[1] or second[2] < first[1]:
        lo, hi = min(lo, first[1], second[1]), max(hi, first[2], second[2])
    else:
        lo, hi = min(lo, first[0], second[0]), max(hi, first[0], second[0])
    return Speedup(s, lo, hi, (first[0], second[0]))


def geomean(xs: Sequence[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def geomean_ci(cis: Sequence[tuple[float, float, float]]) -> tuple[float, float, float]:
    """Geometric mean of speedups; the interval is the geometric mean of the bounds (conservative)."""
    return geomean([c[0] for c in cis]), geomean([c[1] for c in cis]), geomean([c[2] for c in cis])


def net_samples(raw: Sequence[float], null: Sequence[float]) -> list[float]:
    """Each call's time less the protocol's fixed cost measured in the same iteration (the report's
    figures, and the supervisor's check of whether they can be scored yet)."""
    return [r - n for r, n in zip(raw, null, strict=False)]
