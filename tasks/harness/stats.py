"""Small statistics for timing samples (pure Python: no numpy or torch needed)."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


def median(xs: Sequence[float]) -> float:
    return float(statistics.median(xs))


def median_rse(xs: Sequence[float], resamples: int = 200, seed: int = 0) -> float:
    """Relative standard error of the median, by bootstrap; inf for fewer than 3 samples."""
    if len(xs) < 3:
        return math.inf
    rng = random.Random(seed)
    meds = [statistics.median(rng.choices(xs, k=len(xs))) for _ in range(resamples)]
    m = statistics.median(xs)
    return statistics.pstdev(meds) / m if m > 0 else math.inf


def speedup_ci(
    base: Sequence[float], cand: Sequence[float], resamples: int = 1000, level: float = 0.95, seed: int = 1
) -> tuple[float, float, float]:
    """Speedup median(base)/median(cand) with a bootstrap confidence interval (paired resampling)."""
    point = median(base) / median(cand)
    n = min(len(base), len(cand))
    rng = random.Random(seed)
    ratios = []
    for _ in range(resamples):
        idx = [rng.randrange(n) for _ in range(n)]
        c = statistics.median(cand[i] for i in idx)
        ratios.append(statistics.median(base[i] for i in idx) / c if c > 0 else math.inf)
    ratios.sort()
    lo = ratios[int((1 - level) / 2 * (resamples - 1))]
    hi = ratios[int((1 + level) / 2 * (resamples - 1))]
    return point, lo, hi


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
        """The halves disagree by more than DRIFT_NOTE_RATIO (the interval was widened for it)."""
        if self.halves is None or min(self.halves) <= 0:
            return False
        return max(self.halves) / min(self.halves) > DRIFT_NOTE_RATIO


def speedup_interval(
    base: Sequence[float], cand: Sequence[float], resamples: int = 1000, level: float = 0.95, seed: int = 1
) -> Speedup:
    """The speedup of paired samples (in the order they were taken) and an interval that covers the
    pooled samples' and each half's own. A host whose speed changed in the middle of a measurement (a
    clock step, a neighbour starting, one process slowing) moves the halves apart; the pooled
    interval alone would then claim a precision the measurement did not have, and could exclude a
    speedup of 1 that neither half supports. The point estimate stays the pooled one."""
    s, lo, hi = speedup_ci(base, cand, resamples, level, seed)
    n = min(len(base), len(cand))
    if n < 2 * MIN_HALF:
        return Speedup(s, lo, hi)
    k = n // 2
    first = speedup_ci(base[:k], cand[:k], resamples, level, seed)
    second = speedup_ci(base[k:n], cand[k:n], resamples, level, seed)
    return Speedup(s, min(lo, first[1], second[1]), max(hi, first[2], second[2]), (first[0], second[0]))


def geomean(xs: Sequence[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def geomean_ci(cis: Sequence[tuple[float, float, float]]) -> tuple[float, float, float]:
    """Geometric mean of speedups; the interval is the geometric mean of the bounds (conservative)."""
    return geomean([c[0] for c in cis]), geomean([c[1] for c in cis]), geomean([c[2] for c in cis])


def net_samples(raw: Sequence[float], null: Sequence[float]) -> list[float]:
    """Each call's time less the protocol's fixed cost measured in the same iteration (the report's
    figures, and the supervisor's check of whether they can be scored yet)."""
    return [r - n for r, n in zip(raw, null, strict=False)]
