"""tasks.harness.stats at its edges: each boundary of the rules, written so that moving it by one
comparison or one index fails a test (mutation testing found these unpinned). Pure, no Docker."""

from __future__ import annotations

import dataclasses
import math

import pytest

from kcoral.tasks.harness import stats
from kcoral.tasks.harness.stats import MIN_HALF, Speedup, estimate, median_interval


def measured(block_values: list[float]) -> Speedup:
    """The estimate of a run whose blocks have exactly these ratios, in this time order: both
    iterations of a block time the baseline at the value and the candidate at 1, with no protocol cost
    (integers: a block's geometric mean sqrt(v * v) is v exactly)."""
    base = [float(v) for v in block_values for _ in range(2)]
    return estimate(base, [1.0] * len(base), [0.0] * len(base))


def test_exactly_two_halves_worth_of_blocks_get_halves_split_in_time_order() -> None:
    values = [1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 4, 4][: 2 * MIN_HALF]
    got = measured(values)
    assert got.blocks == 2 * MIN_HALF and got.halves == (1.0, 3.0)
    assert measured(values[:-1]).halves is None


def _widened(first: list[float], second: list[float]) -> tuple[float, float]:
    pooled = median_interval(first + second)
    a, b = median_interval(first), median_interval(second)
    return min(pooled[1], a[1], b[1]), max(pooled[2], a[2], b[2])


@pytest.mark.parametrize("order", ["up", "down"])
def test_halves_whose_intervals_do_not_meet_widen_to_both_halves_intervals(order: str) -> None:
    low, high = [1.0] * 5 + [2.0] * 5, [3.0] * 5 + [4.0] * 5
    first, second = (low, high) if order == "up" else (high, low)
    got = measured(first + second)
    assert (got.lo, got.hi) == _widened(first, second) == (1.0, 4.0)
    assert got.halves == (stats.median(first), stats.median(second))


@pytest.mark.parametrize("order", ["up", "down"])
def test_halves_whose_intervals_just_touch_widen_only_to_both_halves_medians(order: str) -> None:
    """Each half's interval ends where the other's begins (2.0): they meet, so the interval reaches only
    the halves' own speedups (1.5 and 2.5) beyond the pooled one ([2, 2])."""
    low, high = [1.0] * 5 + [2.0] * 5, [2.0] * 5 + [3.0] * 5
    first, second = (low, high) if order == "up" else (high, low)
    assert median_interval(first + second)[1:] == (2.0, 2.0)
    got = measured(first + second)
    assert (got.lo, got.hi) == (1.5, 2.5)
    assert got.halves == ((1.5, 2.5) if order == "up" else (2.5, 1.5))


def test_overlapping_halves_shifted_apart_keep_the_pooled_interval_and_both_medians() -> None:
    first = [10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0]
    second = [12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0]
    pooled = median_interval(first + second)
    a, b = median_interval(first), median_interval(second)
    assert a[2] >= b[1] and b[2] >= a[1]  # they overlap
    got = measured(first + second)
    assert (got.lo, got.hi) == (min(pooled[1], a[0], b[0]), max(pooled[2], a[0], b[0]))
    assert got.lo > min(a[1], b[1])  # not the halves' intervals whole


def test_drift_is_noted_past_the_ratio_and_only_with_two_positive_halves() -> None:
    def drifted(halves: tuple[float, float] | None) -> bool:
        return Speedup(1.0, 0.9, 1.1, halves).drifted

    assert not drifted(None) and not drifted((0.0, 2.0)) and not drifted((-1.0, 2.0))
    assert not drifted((1.0, stats.DRIFT_NOTE_RATIO)) and drifted((1.0, 1.06)) and drifted((0.5, 2.0))
    assert drifted((2.0, 0.5)) and not drifted((0.8, 0.8))


def test_a_zero_or_unbounded_speedup_has_no_half_width() -> None:
    assert Speedup(0.0, 0.0, 1.0).relative_half_width == math.inf
    assert Speedup(1.0, 0.0, math.inf).relative_half_width == math.inf
    assert Speedup(2.0, 1.0, 2.5).relative_half_width == 0.5


def test_a_side_whose_median_raw_call_is_zero_makes_the_protocol_dominate() -> None:
    got = estimate([0.0] * 12, [1.0] * 12, [0.5] * 12)
    assert got.protocol_share == math.inf and got.basis == "raw"


def test_ratio_and_block_limits() -> None:
    assert stats._ratio(1.0, 0.0) == math.inf and stats._ratio(0.0, 0.0) is None and stats._ratio(0.0, -1.0) is None
    assert stats._ratio(0.0, 2.0) == 0.0 and stats._ratio(3.0, 2.0) == 1.5
    assert stats._block(0.0, 2.0) == 0.0 and stats._block(0.0, math.inf) is None
    assert stats._block(math.inf, 2.0) == math.inf and stats._block(None, 2.0) is None


def test_min_samples_at_exact_levels() -> None:
    assert stats.min_samples(0.0) == 1 and stats.min_samples(0.75) == 3 and stats.min_samples(0.95) == 6


def test_too_disturbed_is_more_than_half() -> None:
    assert not stats.too_disturbed([True, False]) and not stats.too_disturbed([True, False, False, False])
    assert stats.too_disturbed([True, True, False]) and stats.too_disturbed([True, True, True, False])
    assert not stats.too_disturbed([])


def test_a_speedup_cannot_be_changed_once_made() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        Speedup(1.0, 0.9, 1.1).lo = 0.0  # type: ignore[misc]


def test_net_samples_pair_each_call_with_its_iteration_and_drop_an_unpaired_one() -> None:
    assert stats.net_samples([3.0, 4.0, 5.0], [1.0, 1.5]) == [2.0, 2.5]


@pytest.mark.parametrize(
    ("lo", "hi", "word"),
    [
        (1.02, 1.05, "faster"),
        (0.90, 0.99, "slower"),
        (0.95, 1.10, "ambiguous"),
        (1.0, 1.2, "ambiguous"),  # touching 1.0 is not above it
        (0.8, 1.0, "ambiguous"),
        (1.0, 1.01, "same"),  # exactly SAME_WITHIN apart
        (0.98, 1.0, "ambiguous"),
    ],
)
def test_comparison_against_the_baseline_by_default(lo: float, hi: float, word: str) -> None:
    assert stats.compare_intervals(lo, hi) == word


def test_the_default_level_is_95_percent() -> None:
    """Callers that name no level (the report, the sampler's stopping rule) get the 95% interval: from
    10 samples the 2nd to the 9th order statistic, and 6 samples before any interval at all."""
    assert median_interval([float(x) for x in range(1, 11)]) == (5.5, 2.0, 9.0)
    assert stats.min_samples() == 6


def test_an_estimate_by_default_is_at_95_percent_with_no_position_correction() -> None:
    """estimate's defaults: the 95% level and no A/A position cost taken off the candidate's calls (a
    slot with no calibration): two equal sides measure exactly 1."""
    base = [2.0 + 0.01 * (i % 7) for i in range(24)]
    cand = [1.0 + 0.01 * (i % 5) for i in range(24)]
    null = [0.1] * 24
    assert estimate(base, cand, null) == estimate(base, cand, null, level=0.95, position_ms=0.0)
    assert estimate([2.0] * 12, [2.0] * 12, [0.1] * 12).speedup == 1.0


def test_an_iteration_cut_short_is_left_out() -> None:
    """The supervisor can stop between an iteration's calls (a budget, a failed check): the lists then
    differ in length, and only the iterations every list holds count."""
    base, cand, null = [3.0] * 12, [1.0] * 12, [0.0] * 12
    whole = estimate(base, cand, null)
    assert estimate(base + [3.0], cand, null) == whole
    assert estimate(base, cand + [1.0, 1.0], null + [0.0]) == whole


def test_compare_intervals_against_the_baseline_by_default() -> None:
    """With no other interval named, an interval is compared with the baseline's exact 1.0: the words
    the report prints for a speedup's interval."""
    assert stats.compare_intervals(1.2, 1.5) == "faster"
    assert stats.compare_intervals(0.5, 0.9) == "slower"
    assert stats.compare_intervals(0.999, 1.005) == "same"
    assert stats.compare_intervals(0.95, 1.2) == "ambiguous"
