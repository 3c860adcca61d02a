"""The slot's noise floor (tasks.calibration) and how a report folds it in (pure logic)."""

from __future__ import annotations

import math
import random

import pytest

from kcoral.tasks import calibration
from kcoral.tasks.calibration import AaRun, floors, noise_floor, widen
from kcoral.tasks.harness.schema import Timing
from kcoral.tasks.harness.stats import estimate
from kcoral.tasks.report import timing_row

NOW = 1_000_000.0


def run(speedup: float, base: float = 4.0, at: float = NOW, workload: str = "w", job: str = "j") -> AaRun:
    return AaRun(workload, job, at, speedup, base, base / speedup)


def test_no_floor_below_the_minimum_of_requests() -> None:
    assert noise_floor([run(0.92), run(0.93)]) is None
    assert floors([run(0.92), run(0.93)], NOW) == {}


def test_the_position_cost_is_a_fixed_ms_per_call_taken_from_the_a_a_requests() -> None:
    """Four A/A requests whose candidate took 0.35 ms longer per call than the baseline (4 ms): the
    position costs 0.35 ms, and once it is taken off, the requests agree exactly (no spread)."""
    floor = noise_floor([run(4.0 / 4.35), run(4.0 / 4.35), run(4.0 / 4.35), run(4.0 / 4.35)])
    assert floor is not None
    assert floor.position_ms == pytest.approx(0.35)
    assert floor.spread == pytest.approx(0.0, abs=1e-12) and floor.half_width == pytest.approx(0.0, abs=1e-12)
    assert floor.corrected == pytest.approx(1.0)


def test_the_floor_is_a_prediction_interval_for_one_more_request() -> None:
    """Five A/A requests spread 1%: the floor is t(4) * sd * sqrt(1 + 1/5)."""
    logs = [-0.01, -0.005, 0.0, 0.005, 0.01]
    floor = noise_floor([run(math.exp(x)) for x in logs])
    assert floor is not None
    sd = 0.0079  # ~ the sd of those log speedups, once the median's position is taken off
    assert floor.half_width == pytest.approx(2.776 * floor.spread * math.sqrt(1.2))
    assert floor.spread == pytest.approx(sd, rel=0.05)


def test_old_requests_do_not_count_and_only_the_latest_are_kept() -> None:
    old = [run(0.5, at=NOW - calibration.MAX_AGE_S - 1) for _ in range(5)]
    assert floors(old, NOW) == {}
    many = [run(1.0 + 0.001 * i, at=NOW - i) for i in range(30)]
    (floor,) = floors(many, NOW).values()
    assert floor.requests == calibration.KEEP


def test_floors_are_per_workload() -> None:
    runs = [run(0.9, workload="a") for _ in range(3)] + [run(1.1, workload="b") for _ in range(2)]
    assert set(floors(runs, NOW)) == {"a"}


def test_widening_is_in_quadrature_on_each_side() -> None:
    lo, hi = widen(2.0, 1.9, 2.2, 0.0)
    assert (lo, hi) == pytest.approx((1.9, 2.2))
    lo, hi = widen(2.0, 2.0, 2.0, 0.05)
    assert lo == pytest.approx(2.0 * math.exp(-0.05)) and hi == pytest.approx(2.0 * math.exp(0.05))
    lo, hi = widen(1.0, math.exp(-0.03), math.exp(0.04), 0.04)
    assert math.log(1 / lo) == pytest.approx(0.05) and math.log(hi) == pytest.approx(math.sqrt(0.0032))


def test_the_estimator_takes_the_position_off_the_candidates_calls() -> None:
    base = [5.0] * 20
    kern = [5.35] * 20  # the same work, 0.35 ms more where the candidate runs
    null = [1.0] * 20
    assert estimate(base, kern, null).speedup == pytest.approx(4.0 / 4.35)
    assert estimate(base, kern, null, position_ms=0.35).speedup == pytest.approx(1.0)


def test_a_two_core_slot_a_a_bias_is_corrected_and_covered() -> None:
    """Simulated A/A requests on a slot whose candidate position costs 0.3 ms per 4 ms call, with
    noise within each request and a 1.5% level between requests: without the slot's floor most
    intervals miss 1.0 (a structural loss for the candidate); with a floor from 8 requests, 95% of
    intervals cover it (over several calibrations: one floor rests on 8 draws of the spread)."""
    plain = folded = 0
    for seed in range(5):
        rng = random.Random(seed)

        def request(rng: random.Random = rng) -> Timing:
            level = math.exp(rng.gauss(0, 0.015))  # this request's host state, the candidate's side only
            b, c, n = [], [], []
            for _ in range(40):
                common = rng.gauss(1.0, 0.01)
                b.append(1.0 + 4.0 * common * math.exp(rng.gauss(0, 0.01)))
                c.append(1.0 + (4.0 * common * math.exp(rng.gauss(0, 0.01)) + 0.3) * level)
                n.append(1.0)
            return Timing(baseline_ms=b, kernel_ms=c, null_ms=n, stopped_by="max_reps", warmup_calls=3)

        calib = [timing_row("w", request(), {}, [], []) for _ in range(8)]
        floor = noise_floor([run(r["speedup"], r["baseline_ms"]) for r in calib])
        assert floor is not None and 0.25 < floor.position_ms < 0.35
        for _ in range(40):
            r = timing_row("w", request(), {}, [], [])
            plain += r["speedup_lo"] <= 1.0 <= r["speedup_hi"]
            r = timing_row("w", request(), {}, [], [], floor)
            folded += r["speedup_lo"] <= 1.0 <= r["speedup_hi"]
            assert r["calibration"]["requests"] == 8
    assert plain < 0.25 * 200
    assert folded >= 0.95 * 200
