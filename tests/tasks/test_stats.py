"""Exact behaviour of tasks.harness.stats: the order-statistic interval, the estimate's blocks of opposite-order
iterations, its basis and the iterations it leaves out; pure, no Docker (simulated properties: test_estimator.py)."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from kcoral.tasks.harness import stats
from kcoral.tasks.harness.schema import TimingMethod
from kcoral.tasks.harness.stats import estimate, geomean, geomean_ci, median, median_interval


def free(n: int) -> list[float]:
    """A protocol that costs nothing: the net times are the raw ones, exactly."""
    return [0.0] * n


def blocks(base: list[float], cand: list[float]) -> list[float]:
    """The blocks' ratios the estimate takes, written out: iterations 2k and 2k+1's geometric mean."""
    r = [b / c for b, c in zip(base, cand, strict=True)]
    return [math.sqrt(r[k] * r[k + 1]) for k in range(0, len(r) - 1, 2)]


def test_median_is_a_float_of_the_middle() -> None:
    assert median([3, 1, 2]) == 2.0 and isinstance(median([3, 1, 2]), float)
    assert median([1.0, 2.0, 4.0, 8.0]) == 3.0


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        # the textbook 95% order statistics (1-based): n=6 (1, 6), n=10 (2, 9), n=30 (10, 21), n=100 (40, 61)
        (6, (0, 5)),
        (10, (1, 8)),
        (30, (9, 20)),
        (100, (39, 60)),
    ],
)
def test_median_interval_is_the_binomial_order_statistics(n: int, expected: tuple[int, int]) -> None:
    xs = [float(k) for k in range(n)]
    random.Random(n).shuffle(xs)  # the order taken does not matter
    m, lo, hi = median_interval(xs)
    assert m == statistics.median(xs) and (lo, hi) == (float(expected[0]), float(expected[1]))


def test_median_interval_covers_the_true_median_at_its_level() -> None:
    rng = random.Random(7)
    for n in (10, 40, 200):
        trials = 1000
        hits = sum(
            lo <= math.log(2) <= hi
            for _, lo, hi in (median_interval([rng.expovariate(1) for _ in range(n)]) for _ in range(trials))
        )
        assert 0.95 * trials <= hits <= 0.99 * trials


def test_median_interval_of_too_few_samples_is_the_whole_range() -> None:
    assert median_interval([3.0, 1.0, 2.0, 5.0, 4.0]) == (3.0, 1.0, 5.0)
    assert median_interval([2.0]) == (2.0, 2.0, 2.0)
    assert all(math.isnan(x) for x in median_interval([]))


def test_a_level_narrows_or_widens_the_interval() -> None:
    xs = [float(k) for k in range(100)]
    assert median_interval(xs, 0.5)[1:] == (46.0, 53.0)  # P(Bin(100, 1/2) <= 46) = 0.242
    assert median_interval(xs, 0.99)[1:] == (36.0, 63.0)


def test_a_side_not_above_zero_ranks_at_its_limit() -> None:
    base = [2.0, 3.0, 1.0, 2.0, -0.1, 2.0, -0.1, 2.0, 1.0, -0.1] + [2.0] * 8
    cand = [1.0, 1.5, -0.2, 1.0, 1.0, 1.0, -0.3, 1.0, -0.2, 1.0] + [1.0] * 8
    # blocks: 2 and 2; the candidate's time not above zero: inf; the baseline's: 0; neither above zero in
    # one iteration: no ratio; inf and 0 in one block: no ratio; then four more of 2 (7 blocks: enough for
    # an interval of their own, its bounds the limits)
    assert estimate(base, cand, free(18)) == stats.Speedup(2.0, 0.0, math.inf, blocks=7)


def test_the_speedup_is_the_median_of_the_blocks_ratios() -> None:
    # every iteration's baseline is twice its candidate, whatever the iteration's own speed: exactly 2
    base = [2.0, 4.0, 6.0, 8.0, 10.0, 3.0, 7.0, 2.5, 9.0, 5.0, 4.5, 6.5] * 2
    cand = [b / 2 for b in base]
    assert estimate(base, cand, free(24)) == stats.Speedup(2.0, 2.0, 2.0, (2.0, 2.0), blocks=12)
    # a ratio of medians would be 1 here; the blocks say 2, 2 and 0.25
    assert estimate([2.0, 2.0, 4.0, 4.0, 1.0, 1.0], [1.0, 1.0, 2.0, 2.0, 4.0, 4.0], free(6)).speedup == 2.0


def test_a_block_is_the_geometric_mean_of_its_two_orders() -> None:
    """Baseline-first iterations 1.25x, candidate-first 0.8x (a position effect): each block exactly 1."""
    base, cand = [5.0, 4.0] * 6, [4.0, 5.0] * 6
    assert estimate(base, cand, free(12)) == stats.Speedup(1.0, 1.0, 1.0, blocks=6)


def test_a_trailing_iteration_without_its_partner_is_left_out() -> None:
    assert estimate([2.0] * 12 + [9.0], [1.0] * 13, free(13)) == stats.Speedup(2.0, 2.0, 2.0, blocks=6)


def test_disturbed_iterations_are_left_out_with_their_partners() -> None:
    base = [2.0, 2.0, 50.0, 3.0, 3.0, 3.0, 4.0, 4.0] + [2.0, 2.0, 3.0, 3.0, 4.0, 4.0, 3.0, 3.0]
    cand = [1.0] * 16
    marks = [False, False, True]  # iteration 2 (and so its partner, 3) is out; later ones are not marked
    # the 7 blocks left: 2, 3, 4, 2, 3, 4, 3
    assert estimate(base, cand, free(16), marks) == stats.Speedup(3.0, 2.0, 4.0, blocks=7, disturbed=1)
    # every iteration disturbed: nothing to measure
    gone = estimate(base, cand, free(16), [True] * 16)
    assert gone.blocks == 0 and gone.disturbed == 16 and math.isnan(gone.speedup)


def test_fewer_blocks_than_min_samples_give_no_interval() -> None:
    """A distribution-free 95% interval for a median needs 6 samples: from fewer blocks the interval is
    [0, inf], never the zero-width one a single block's whole range would be (which passed for stable)."""
    assert stats.min_samples(0.95) == 6 and stats.min_samples() == 6 and stats.min_samples(0.99) == 8
    for n in (2, 10):  # 1 block, 5 blocks
        one = estimate([2.0] * n, [1.0] * n, free(n))
        assert (one.speedup, one.lo, one.hi, one.blocks) == (2.0, 0.0, math.inf, n // 2)
        assert math.isinf(one.relative_half_width)
    six = estimate([2.0, 2.0, 3.0, 3.0] * 3, [1.0] * 12, free(12))  # 6 blocks: 2 and 3 in turn
    assert (six.speedup, six.lo, six.hi, six.blocks) == (2.5, 2.0, 3.0, 6)
    assert six.relative_half_width == pytest.approx(0.2)


def test_the_basis_is_raw_once_the_protocol_dominates() -> None:
    """Protocol 2 ms: net while it is at most protocol_dominant (TimingMethod's 0.5) of the shorter side's raw
    call (4 ms), raw above."""
    assert TimingMethod().protocol_dominant == 0.5
    null = [2.0] * 6
    net = estimate([6.0] * 6, [4.0] * 6, null)
    assert (net.basis, net.speedup, net.protocol_share) == ("net", 2.0, 0.5)
    raw = estimate([6.0] * 6, [3.5] * 6, null)  # the candidate's raw call 3.5 ms: 2 > 1.75
    assert (raw.basis, raw.speedup, raw.protocol_share) == ("raw", 6.0 / 3.5, 2.0 / 3.5)
    assert estimate([3.5] * 6, [6.0] * 6, null).basis == "raw"  # the baseline's the shorter: the same rule
    # the disturbed iterations do not count towards the basis either
    cand, marks = [4.0] * 4 + [3.0] * 4, [False] * 4 + [True] * 4
    assert estimate([6.0] * 8, cand, [2.0] * 8).basis == "raw"  # the median candidate call: 3.5 ms
    assert estimate([6.0] * 8, cand, [2.0] * 8, marks).basis == "net"  # 4 ms without the disturbed ones


def test_noise_the_calls_of_an_iteration_share_cancels() -> None:
    rng = random.Random(3)
    drift = [1 + 0.1 * math.sin(i / 7) + rng.gauss(0, 0.05) for i in range(200)]  # the host's, shared
    base = [3.0 * d * (1 + rng.gauss(0, 0.005)) for d in drift]
    cand = [2.0 * d * (1 + rng.gauss(0, 0.005)) for d in drift]
    result = estimate(base, cand, free(200))
    assert result.speedup == pytest.approx(1.5, rel=0.002)
    assert result.relative_half_width < 0.003  # the shared 5-10% noise is gone


def test_relative_half_width_is_the_farther_side() -> None:
    assert stats.Speedup(2.0, 1.9, 2.05).relative_half_width == pytest.approx(0.05)
    assert math.isinf(stats.Speedup(math.nan, math.nan, math.nan).relative_half_width)
    assert math.isinf(stats.Speedup(1.0, 0.5, math.inf).relative_half_width)


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
    pooled = median_interval(blocks(base, cand))
    widened = estimate(base, cand, free(60))
    assert widened.speedup == pooled[0]
    assert pooled[1] > 1.0  # alone it excludes "no gain"
    assert widened.lo <= 1.0 < 1.3 <= widened.hi  # the first half's ~1.0x and the second's ~1.33x
    assert widened.halves == (pytest.approx(1.0, abs=0.02), pytest.approx(1 / 0.75, rel=0.02))
    assert widened.drifted


def test_a_steady_measurement_keeps_its_interval_and_covers_each_halfs_speedup() -> None:
    base, cand = _noisy(60, 1.0, 4), _noisy(60, 0.5, 5)
    pooled, widened = median_interval(blocks(base, cand)), estimate(base, cand, free(60))
    assert not widened.drifted and widened.halves is not None
    assert widened.lo == min(pooled[1], *widened.halves) and widened.hi == max(pooled[2], *widened.halves)
    assert (widened.hi - widened.lo) < 1.5 * (pooled[2] - pooled[1])


def test_too_few_samples_for_halves_leave_the_pooled_interval() -> None:
    base, cand = _noisy(19, 1.0, 6), _noisy(19, 0.5, 7)  # 9 blocks: fewer than MIN_HALF in each half
    assert estimate(base, cand, free(19)) == stats.Speedup(*median_interval(blocks(base[:18], cand[:18])), blocks=9)


@pytest.mark.parametrize(
    ("interval", "other", "word"),
    [
        ((1.02, 1.05), (1.0, 1.0), "faster"),
        ((0.90, 0.99), (1.0, 1.0), "slower"),
        ((0.996, 1.004), (1.0, 1.0), "same"),
        ((0.95, 1.10), (1.0, 1.0), "ambiguous"),  # contains 1.0 but too wide to call it the same
        ((1.10, 1.20), (1.00, 1.05), "faster"),  # two evaluations: the new one's whole interval above
        ((1.00, 1.03), (1.02, 1.05), "ambiguous"),  # overlapping, yet not within 1% of each other
    ],
)
def test_comparisons_are_decided_by_intervals_never_by_points(
    interval: tuple[float, float], other: tuple[float, float], word: str
) -> None:
    assert stats.compare_intervals(*interval, *other) == word
