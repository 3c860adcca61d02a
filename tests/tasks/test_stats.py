"""Exact behaviour of tasks.harness.stats: thresholds, defaults, the bootstrap quantiles; pure, no Docker."""

from __future__ import annotations

import math
import statistics

import pytest

from kcoral.tasks.harness import stats
from kcoral.tasks.harness.stats import geomean, geomean_ci, median, median_rse, speedup_ci


def test_median_is_a_float_of_the_middle() -> None:
    assert median([3, 1, 2]) == 2.0 and isinstance(median([3, 1, 2]), float)
    assert median([1.0, 2.0, 4.0, 8.0]) == 3.0


def test_median_rse_needs_three_samples() -> None:
    assert math.isinf(median_rse([1.0, 2.0]))
    assert math.isfinite(median_rse([1.0, 2.0, 3.0]))


def test_median_rse_of_identical_samples_is_zero() -> None:
    assert median_rse([2.5] * 7) == 0.0


def test_median_rse_is_relative_to_the_median() -> None:
    xs = [1.0, 1.2, 0.9, 1.1, 1.05, 0.95, 1.3]
    assert median_rse([10 * x for x in xs]) == pytest.approx(median_rse(xs), rel=1e-12)
    assert 0 < median_rse(xs) < 1


@pytest.mark.parametrize("xs", [[0.0, 0.0, 0.0, 1.0, -1.0], [-1.0, -2.0, -3.0]])
def test_median_rse_without_a_positive_median_is_infinite(xs: list[float]) -> None:
    assert math.isinf(median_rse(xs))


def test_median_rse_defaults() -> None:
    xs = [1.0, 1.4, 0.7, 1.1, 1.05, 0.95, 1.3, 2.0, 0.5]
    assert median_rse(xs) == median_rse(xs, resamples=200, seed=0)
    assert median_rse(xs) != median_rse(xs, resamples=201, seed=0)
    assert median_rse(xs) != median_rse(xs, resamples=200, seed=1)


class _IndexRng:
    """A stand-in for random.Random: resample k draws index k every time, so ratio k is base[k]/cand[k]."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.calls = 0

    def randrange(self, n: int) -> int:
        k = self.calls // n
        self.calls += 1
        return k % n


@pytest.mark.parametrize(("n", "level"), [(1000, 0.95), (1000, 0.9), (1001, 0.5)])
def test_speedup_interval_is_the_lower_order_statistic_of_the_level(
    monkeypatch: pytest.MonkeyPatch, n: int, level: float
) -> None:
    monkeypatch.setattr(stats.random, "Random", _IndexRng)
    base = [float(k + 1) for k in range(n)]
    cand = [1.0] * n
    _, lo, hi = speedup_ci(base, cand, resamples=n, level=level)
    # the sorted ratios are 1..n; the bounds sit at floor((1 -/+ level) / 2 * (n - 1))
    expected = {(1000, 0.95): (25.0, 975.0), (1000, 0.9): (50.0, 950.0), (1001, 0.5): (251.0, 751.0)}
    assert (lo, hi) == expected[n, level]


def test_speedup_interval_defaults() -> None:
    base = [2.0 + 0.013 * ((7 * i) % 29) for i in range(41)]
    cand = [1.0 + 0.011 * ((5 * i) % 31) for i in range(41)]
    assert speedup_ci(base, cand) == speedup_ci(base, cand, resamples=1000, level=0.95, seed=1)
    assert speedup_ci(base, cand) != speedup_ci(base, cand, seed=2)


def test_speedup_interval_default_resamples_and_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[_IndexRng] = []

    def rng(seed: int) -> _IndexRng:
        made.append(_IndexRng(seed))
        return made[-1]

    monkeypatch.setattr(stats.random, "Random", rng)
    speedup_ci([2.0, 3.0, 4.0], [1.0, 1.0, 1.0])
    assert [(r.seed, r.calls) for r in made] == [(1, 1000 * 3)]


def test_speedup_point_and_pairing() -> None:
    # every pair has ratio 2, so every paired resample's ratio of medians is 2 as well
    base = [2.0, 4.0, 6.0, 8.0, 10.0]
    cand = [1.0, 2.0, 3.0, 4.0, 5.0]
    assert speedup_ci(base, cand) == (2.0, 2.0, 2.0)


def test_speedup_resample_with_zero_median_is_infinite_not_an_error() -> None:
    # a resample drawing the zero at least twice has a zero candidate median (about 26% of them)
    s, lo, hi = speedup_ci([1.0, 1.0, 1.0], [0.0, 1.0, 1.0], resamples=300)
    assert s == 1.0 and lo == 1.0 and math.isinf(hi)


def test_speedup_point_uses_the_medians() -> None:
    base = [1.0, 9.0, 3.0]
    cand = [2.0, 1.0, 1.5]
    assert speedup_ci(base, cand, resamples=10)[0] == statistics.median(base) / statistics.median(cand)


def test_geomean_and_interval_use_each_bound() -> None:
    assert geomean([2.0, 8.0]) == pytest.approx(4.0)
    assert geomean([5.0]) == pytest.approx(5.0)
    assert geomean([1.0, 1.0, 8.0]) == pytest.approx(2.0)
    assert math.isnan(geomean([]))
    g, lo, hi = geomean_ci([(4.0, 1.0, 9.0), (1.0, 4.0, 1.0)])
    assert (g, lo, hi) == (pytest.approx(2.0), pytest.approx(2.0), pytest.approx(3.0))


def _noisy(n: int, centre: float, seed: int) -> list[float]:
    import random

    rng = random.Random(seed)
    return [centre * (1 + rng.gauss(0, 0.01)) for _ in range(n)]


def test_a_measurement_whose_host_changed_half_way_gets_an_interval_covering_both_halves() -> None:
    """The H200 case: the pooled interval claimed a gain ([1.116, 1.301]) neither half agreed on."""
    base = _noisy(60, 1.0, 1)
    cand = _noisy(30, 1.0, 2) + _noisy(30, 0.75, 3)  # the candidate's side sped up at sample 30
    pooled = speedup_ci(base, cand)
    widened = stats.speedup_interval(base, cand)
    assert widened.speedup == pooled[0]
    assert pooled[1] > 1.0  # alone it excludes "no gain"
    assert widened.lo <= 1.0 < 1.3 <= widened.hi  # the first half's ~1.0x and the second's ~1.33x
    assert widened.halves == (pytest.approx(1.0, abs=0.02), pytest.approx(1 / 0.75, rel=0.02))
    assert widened.drifted


def test_a_steady_measurement_keeps_its_interval_about_as_it_was() -> None:
    base, cand = _noisy(60, 1.0, 4), _noisy(60, 0.5, 5)
    pooled, widened = speedup_ci(base, cand), stats.speedup_interval(base, cand)
    assert not widened.drifted and widened.halves is not None
    assert widened.lo <= pooled[1] and widened.hi >= pooled[2]
    assert (widened.hi - widened.lo) < 2 * (pooled[2] - pooled[1])  # each half has half the samples


def test_too_few_samples_for_halves_leave_the_pooled_interval() -> None:
    base, cand = _noisy(9, 1.0, 6), _noisy(9, 0.5, 7)
    assert stats.speedup_interval(base, cand) == stats.Speedup(*speedup_ci(base, cand))
