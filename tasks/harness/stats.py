"""Small statistics for timing samples (pure Python: no numpy or torch needed)."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence


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


def geomean(xs: Sequence[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def geomean_ci(cis: Sequence[tuple[float, float, float]]) -> tuple[float, float, float]:
    """Geometric mean of speedups; the interval is the geometric mean of the bounds (conservative)."""
    return geomean([c[0] for c in cis]), geomean([c[1] for c in cis]), geomean([c[2] for c in cis])


def net_samples(raw: Sequence[float], null: Sequence[float]) -> list[float]:
    """Each call's time less the protocol's fixed cost measured in the same iteration (the report's
    figures, and the supervisor's check of whether they can be scored yet)."""
    return [r - n for r, n in zip(raw, null, strict=False)]
