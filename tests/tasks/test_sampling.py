"""tasks.harness.sampling: when the supervisor stops sampling a timed case, and the iteration order (pure,
on simulated timings and a simulated clock: no torch, no sleep)."""

from __future__ import annotations

import dataclasses
import itertools
import random

import pytest

from kcoral.tasks.harness import sampling, stats
from kcoral.tasks.harness.sampling import Samples
from kcoral.tasks.harness.schema import TimingMethod

METHOD = TimingMethod(min_reps=10, max_reps=60, budget_s=5.0, noisy_budget_s=20.0, interval_target=0.01)


class Clock:
    """Simulated seconds: each iteration takes ``step``."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        return self.now


def simulate(
    cfg: TimingMethod, noise: float, step: float = 0.01, wait: float = 0.0, failed_at: int | None = None
) -> tuple[str, Samples]:
    """Baseline 2 ms and candidate 1 ms per call, each times (1 + uniform noise), a null of 0.1 ms; the
    judge waits ``wait`` ms in every iteration (over its limit: every iteration disturbed)."""
    rng = random.Random(7)
    samples, clock = Samples(), Clock(step)
    failed = [False]

    def iteration(i: int) -> None:
        samples.baseline.append(2.0 * (1 + noise * rng.uniform(-1, 1)))
        samples.candidate.append(1.0 * (1 + noise * rng.uniform(-1, 1)))
        samples.null.append(0.1)
        samples.waits.append(wait)
        clock.now += clock.step
        failed[0] = failed_at is not None and i >= failed_at

    stopped = sampling.sample(iteration, samples, cfg, lambda: failed[0], clock)
    return stopped, samples


def test_a_steady_measurement_stops_once_its_interval_is_within_the_target() -> None:
    stopped, samples = simulate(METHOD, noise=0.001)
    # an early stop needs both halves' blocks (pairs of consecutive iterations) compared: 20, past min_reps
    assert stopped == "stable" and len(samples) == 2 * 2 * stats.MIN_HALF > METHOD.min_reps
    assert samples.estimate(METHOD).relative_half_width <= METHOD.interval_target


@pytest.mark.parametrize(("undecided", "stopped", "iterations"), [(True, "max_reps", 60), (False, "stable", 20)])
def test_a_measurement_the_host_leaves_undecided_is_not_stopped_early(
    undecided: bool, stopped: str, iterations: int
) -> None:
    """Others' work on the candidate's core over its share in too few ms to refuse on (the host's figures
    undecided): a steady measurement that would stop at 20 iterations runs on to max_reps instead, so that
    the figures settle one way or the other; decided, it stops as before."""
    rng = random.Random(7)
    samples, clock = Samples(), Clock(0.01)

    def iteration(i: int) -> None:
        samples.baseline.append(2.0 * (1 + 0.001 * rng.uniform(-1, 1)))
        samples.candidate.append(1.0 * (1 + 0.001 * rng.uniform(-1, 1)))
        samples.null.append(0.1)
        samples.waits.append(0.0)
        clock.now += clock.step

    assert sampling.sample(iteration, samples, METHOD, clock=clock, undecided=lambda: undecided) == stopped
    assert len(samples) == iterations


def test_a_start_that_differs_from_the_rest_is_not_stopped_on() -> None:
    """The candidate 0.6% slower for its first 12 iterations (the start of the timing), then as fast as
    the baseline: six blocks that agree closely would have stopped the measurement at a speedup of
    0.994 with an interval short of 1.0; the halves are compared first, and the interval covers both
    (the later one at 1.0)."""
    samples, clock = Samples(), Clock(0.01)

    def iteration(i: int) -> None:
        samples.baseline.append(2.0)
        samples.candidate.append(2.0 * (1.006 if i < 12 else 1.0) * (1 + 0.0001 * (i % 3)))
        samples.null.append(0.1)
        samples.waits.append(0.0)
        clock.now += clock.step

    cfg = dataclasses.replace(METHOD, interval_target=0.005)
    assert sampling.sample(iteration, samples, cfg, clock=clock) == "stable"
    first = stats.estimate(samples.baseline[:12], samples.candidate[:12], samples.null[:12])
    assert first.relative_half_width <= cfg.interval_target and first.hi < 1.0  # where it used to stop
    est = samples.estimate(cfg)
    assert len(samples) >= 20 and est.halves is not None
    assert est.halves[1] == pytest.approx(1.0, abs=2e-4) and est.lo <= est.halves[0] and est.hi >= est.halves[1]


def test_a_measurement_short_of_the_target_samples_to_max_reps_within_its_budget() -> None:
    stopped, samples = simulate(METHOD, noise=0.2)
    assert stopped == "max_reps" and len(samples) == METHOD.max_reps


def test_past_its_budget_a_scorable_measurement_stops_there() -> None:
    stopped, samples = simulate(METHOD, noise=0.2, step=0.25)  # 0.25 s an iteration, a 5 s budget
    assert stopped == "budget" and len(samples) == 21 and samples.scorable(METHOD)


def test_a_disturbed_host_samples_on_until_the_noisy_budget() -> None:
    """Every iteration disturbed (the judge waited 5 ms each, over its limit): never enough to score,
    so sampling goes on past max_reps for noisy_budget_s more."""
    stopped, samples = simulate(METHOD, noise=0.001, step=0.1, wait=5.0)
    assert stopped == "noisy"
    # max_reps at 0.1 s each (6 s), then 20 s more: 200 iterations
    assert len(samples) == METHOD.max_reps + int(METHOD.noisy_budget_s / 0.1)


def test_an_unscorable_interval_settles_once_it_narrows() -> None:
    """Noisy but not disturbed: at max_reps the interval spans more than scorable_ratio, then narrows
    with more samples; checked every ten iterations."""
    cfg = dataclasses.replace(METHOD, scorable_ratio=1.3, interval_target=0.0)
    stopped, samples = simulate(cfg, noise=0.5, step=0.001)
    assert stopped == "noisy, then settled" and len(samples) % 10 == 0 and len(samples) > cfg.max_reps
    assert samples.scorable(cfg)


def test_a_failed_check_ends_the_noisy_sampling() -> None:
    stopped, samples = simulate(METHOD, noise=0.001, step=0.1, wait=5.0, failed_at=3)
    assert stopped == "max_reps" and len(samples) == METHOD.max_reps


def test_the_order_alternates_and_buffer_sets_go_a_pair_at_a_time() -> None:
    assert [sampling.order(i, "b", "c") for i in range(4)] == [("b", "c"), ("c", "b")] * 2
    assert [sampling.buffer_set(i, 3) for i in range(8)] == [0, 0, 1, 1, 2, 2, 0, 0]
    assert {sampling.buffer_set(i, 0) for i in range(4)} == {0}


@pytest.mark.parametrize(("batch", "marked"), [(0, [False, True]), (8, [False, False])])
def test_a_batch_holds_its_wait_against_the_whole_batch(batch: int, marked: list[bool]) -> None:
    """A 0.5 ms wait is over 2% of a 10 ms call but not of a batch of 8 such calls (80 ms)."""
    cfg = dataclasses.replace(METHOD, disturbed_ms=0.1, disturbed_share=0.02)
    samples = Samples(baseline=[10.0, 10.0], candidate=[10.0, 10.0], null=[0.1, 0.1], waits=[0.05, 0.5])
    assert samples.disturbed(cfg, batch) == marked


def test_a_throttled_iteration_is_disturbed_and_the_record_keeps_every_figure() -> None:
    samples = Samples(
        baseline=[2.0] * 3, candidate=[1.0] * 3, null=[0.1] * 3, waits=[0.0] * 3, mhz=[1980, 1755, 1980],
        temp=[40, 41, 42], throttled=[False, True, False],
    )  # fmt: skip
    assert samples.disturbed(METHOD) == [False, True, False]
    timing = samples.timing(METHOD, 8, "stable", 24, 1.5)
    assert (timing.kernel_ms, timing.disturbed, timing.throttled) == (
        [1.0] * 3,
        [False, True, False],
        samples.throttled,
    )
    assert (timing.batch, timing.graph, timing.warmup_calls, timing.cooled_s) == (8, METHOD.graph, 24, 1.5)
    assert samples.clock_ms() == pytest.approx(9.3) and list(itertools.chain(timing.sm_clock_mhz)) == samples.mhz


@pytest.mark.parametrize("candidate_ms", [2.0, 4.0])
def test_a_candidate_no_faster_than_the_baseline_stops_once_stable_too(candidate_ms: float) -> None:
    """The stopping rule is about the interval's width, not the speedup's side of 1: a candidate as fast
    as the baseline, or slower, measured steadily, stops as soon as a faster one would (not at the end
    of its budget or of max_reps, which would cost every such evaluation its whole budget)."""
    rng = random.Random(3)
    samples, clock = Samples(), Clock(0.01)

    def iteration(i: int) -> None:
        samples.baseline.append(2.0 * (1 + 0.001 * rng.uniform(-1, 1)))
        samples.candidate.append(candidate_ms * (1 + 0.001 * rng.uniform(-1, 1)))
        samples.null.append(0.1)
        samples.waits.append(0.0)
        clock.now += clock.step

    assert sampling.sample(iteration, samples, METHOD, clock=clock) == "stable"
    assert len(samples) == 2 * 2 * stats.MIN_HALF
    assert samples.estimate(METHOD).speedup == pytest.approx(1.9 / (candidate_ms - 0.1), rel=0.01)  # net of the null


def test_noisy_sampling_ends_at_its_budget_to_the_iteration() -> None:
    """The noisy phase samples while its clock is *before* noisy_budget_s past the end of the first (an
    iteration of 0.5 s, exact in binary: 60 of max_reps end at 30 s, 40 more reach the 50 s limit and
    stop there): the budget an operator sets is the time a busy host's evaluation takes."""
    stopped, samples = simulate(METHOD, noise=0.001, step=0.5, wait=5.0)
    assert stopped == "noisy" and len(samples) == METHOD.max_reps + 40


def test_noisy_sampling_stops_at_noisy_reps_times_max_reps_however_fast_the_calls() -> None:
    """A clock that hardly moves (calls far shorter than the budget) still ends the noisy phase: at
    noisy_reps x max_reps iterations in all (the supervisor's record of a case stays bounded)."""
    cfg = dataclasses.replace(METHOD, min_reps=6, max_reps=6)
    stopped, samples = simulate(cfg, noise=0.001, step=0.0, wait=5.0)
    assert stopped == "noisy" and len(samples) == TimingMethod().noisy_reps * 6 == 60


@pytest.mark.parametrize(
    ("n", "disturbed", "enough"),
    [(10, 0, True), (12, 3, False), (30, 16, False), (30, 15, True)],
)
def test_enough_is_min_reps_undisturbed_and_not_too_many_disturbed(n: int, disturbed: int, enough: bool) -> None:
    """Sampling may stop (stable, or at its budget) only with min_reps (10) iterations the judge's side
    did not mark disturbed, and with no more than half of all marked (the report's own rule: an
    estimate over the quiet moments alone is refused)."""
    waits = [5.0] * disturbed + [0.0] * (n - disturbed)  # 5 ms of waiting: over the limit, disturbed
    samples = Samples(baseline=[2.0] * n, candidate=[1.0] * n, null=[0.1] * n, waits=waits)
    assert sum(samples.disturbed(METHOD)) == disturbed
    assert samples.enough(METHOD) is enough
