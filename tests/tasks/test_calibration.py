"""The slot's noise floor (tasks.calibration) and how a report folds it in (pure logic)."""

from __future__ import annotations

import math
import random
from types import SimpleNamespace

import pytest

from kcoral.cli.floors import floor_words
from kcoral.tasks import calibration
from kcoral.tasks.calibration import ONE_WINDOW_S, AaRun, NoiseFloor, floors, noise_floor, widen
from kcoral.tasks.documents import EvalReport, WorkloadRow, parse
from kcoral.tasks.harness.schema import Outcome, Timing
from kcoral.tasks.harness.stats import estimate
from kcoral.tasks.report import timing_row
from tests.tasks.documents import const_timing

NOW = 1_000_000.0


def run(
    speedup: float,
    base: float = 4.0,
    at: float = NOW,
    workload: str = "w",
    job: str = "j",
    own: tuple[float, float] | None = None,
) -> AaRun:
    """An A/A run; ``own``: its own interval's log half-widths below and above (None: not kept)."""
    lo, hi = (speedup * math.exp(-own[0]), speedup * math.exp(own[1])) if own else (None, None)
    return AaRun(workload, job, at, speedup, base, base / speedup, lo, hi)


def floor_of(half_width: float, own_down: float = 0.0, own_up: float = 0.0) -> NoiseFloor:
    return NoiseFloor("w", 5, 0.0, half_width / 3, half_width, 1.0, NOW, NOW, (), own_down, own_up)


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
    """Five A/A requests spread 1%: the floor is t(4) * sd * sqrt(1 + 1/5), sd at its 90% upper bound."""
    logs = [-0.01, -0.005, 0.0, 0.005, 0.01]
    floor = noise_floor([run(math.exp(x)) for x in logs])
    assert floor is not None
    sd = 0.0079  # ~ the sd of those log speedups, once the median's position is taken off
    assert floor.half_width == pytest.approx(2.776 * floor.spread * math.sqrt(4 / 1.064) * math.sqrt(1.2), rel=0.002)
    assert floor.spread == pytest.approx(sd, rel=0.05)


def test_old_requests_do_not_count_and_only_the_latest_are_kept() -> None:
    old = [run(0.5, at=NOW - calibration.CalibrationPolicy().max_age_s - 1) for _ in range(5)]
    assert floors(old, NOW) == {}
    many = [run(1.0 + 0.001 * i, at=NOW - i) for i in range(30)]
    (floor,) = floors(many, NOW).values()
    assert floor.requests == calibration.CalibrationPolicy().keep


def test_an_operators_policy_decides_which_requests_count() -> None:
    """``calibration_keep`` and ``calibration_max_age_s`` (runner.limits): the same runs, another floor."""
    from kcoral.runner.limits import with_limits

    limits, _ = with_limits({"calibration_keep": "4", "calibration_max_age_s": "10"})
    policy = limits.calibration
    assert (policy.keep, policy.max_age_s) == (4, 10.0)
    runs = [run(1.0 + 0.01 * i, at=NOW - i) for i in range(8)]  # 0..7 s old
    (floor,) = floors(runs, NOW, policy).values()
    assert floor.requests == 4
    assert floors(runs, NOW + 9, policy) == {}  # 9 s later only the two newest are 10 s old or less: too few


def test_an_operator_may_turn_the_servers_own_spaced_requests_off_and_no_other_limit() -> None:
    """``calibration_every_s`` 0 is never (runner.recalibration); a limit whose 0 means nothing stays refused."""
    from kcoral.runner.limits import with_limits

    assert with_limits({"calibration_every_s": "0"})[0].calibration.every_s == 0.0
    assert with_limits({"calibration_every_s": "60"})[0].calibration.every_s == 60.0
    with pytest.raises(ValueError, match="calibration_keep: '0' must be above 0"):
        with_limits({"calibration_keep": "0"})


def test_floors_are_per_workload() -> None:
    runs = [run(0.9, workload="a") for _ in range(3)] + [run(1.1, workload="b") for _ in range(2)]
    assert set(floors(runs, NOW)) == {"a"}


def test_without_the_a_a_requests_own_intervals_widening_is_in_quadrature_on_each_side() -> None:
    lo, hi = widen(2.0, 1.9, 2.2, floor_of(0.0))
    assert (lo, hi) == pytest.approx((1.9, 2.2))
    lo, hi = widen(2.0, 2.0, 2.0, floor_of(0.05))
    assert lo == pytest.approx(2.0 * math.exp(-0.05)) and hi == pytest.approx(2.0 * math.exp(0.05))
    lo, hi = widen(1.0, math.exp(-0.03), math.exp(0.04), floor_of(0.04))
    assert math.log(1 / lo) == pytest.approx(0.05) and math.log(hi) == pytest.approx(math.sqrt(0.0032))


def test_a_request_as_steady_as_the_calibration_gets_the_floor_and_a_noisier_one_its_excess_too() -> None:
    """The floor's spread already holds the A/A requests' own noise (typically +-3% here): a request
    whose own interval is that wide gets the floor alone, not the floor and its own in quadrature; one
    wider below than they were (5%) gets the excess, sqrt(5^2 - 3^2) = 4%, added in quadrature."""
    floor = floor_of(0.05, own_down=0.03, own_up=0.03)
    lo, hi = widen(1.0, math.exp(-0.03), math.exp(0.03), floor)
    assert math.log(1 / lo) == pytest.approx(0.05) and math.log(hi) == pytest.approx(0.05)
    lo, hi = widen(1.0, math.exp(-0.05), math.exp(0.02), floor)
    assert math.log(1 / lo) == pytest.approx(math.sqrt(0.05**2 + 0.04**2)) and math.log(hi) == pytest.approx(0.05)


def test_the_floor_never_narrows_a_requests_own_interval() -> None:
    """A calibration whose requests were noisy on their own (+-5%) and agree closely (+-1% floor): a
    request with +-4% of its own keeps it."""
    lo, hi = widen(2.0, 2.0 * math.exp(-0.04), 2.0 * math.exp(0.04), floor_of(0.01, 0.05, 0.05))
    assert (lo, hi) == pytest.approx((2.0 * math.exp(-0.04), 2.0 * math.exp(0.04)))


def test_the_floor_keeps_the_a_a_requests_typical_own_interval() -> None:
    """The root mean square of the A/A requests' own log half-widths, each side; runs stored without
    one (older rows) are left out of it, and a floor of none of them has 0 (quadrature)."""
    runs = [run(1.0, own=(0.01, 0.02)), run(1.01, own=(0.03, 0.02)), run(0.99), run(1.0)]
    floor = noise_floor(runs)
    assert floor is not None
    assert floor.own_down == pytest.approx(math.sqrt((0.01**2 + 0.03**2) / 2))
    assert floor.own_up == pytest.approx(0.02)
    bare = noise_floor([run(1.0), run(1.01), run(0.99)])
    assert bare is not None and bare.own_down == bare.own_up == 0.0


@pytest.mark.parametrize(
    ("lo", "hi"),
    [(None, None), (None, 1.1), (0.0, 1.1), (1.01, 1.1), (0.9, 0.99), (0.9, math.inf), (-1.0, 1.1)],
)
def test_an_a_a_run_without_a_sound_own_interval_has_no_half_widths(lo: float | None, hi: float | None) -> None:
    assert AaRun("w", "j", NOW, 1.0, 4.0, 4.0, lo, hi).own_half_widths() is None


def test_an_a_a_run_keeps_its_own_interval_from_the_report() -> None:
    assert AaRun("w", "j", NOW, 1.0, 4.0, 4.0, math.exp(-0.01), math.exp(0.02)).own_half_widths() == pytest.approx(
        (0.01, 0.02)
    )


def test_the_floor_covers_for_most_calibrations_not_only_on_average() -> None:
    """A floor rests on a few A/A requests whose spread can come out low by chance (on an H100, 9 in a
    row spread 0.062% and the 32 after them 0.12%: the plain prediction interval held 1.0 in 28 of 32).
    Over 2000 simulated calibrations of 9 requests spread 1% (sd), the floor covers one more request
    with probability >= 95% in at least 85% of them (a prediction interval from the sample sd alone:
    about 74%)."""
    rng = random.Random(7)
    covering = 0
    for _ in range(2000):
        floor = noise_floor([run(math.exp(rng.gauss(0, 0.01))) for _ in range(9)])
        assert floor is not None
        covering += math.erf(floor.half_width / (0.01 * math.sqrt(2))) >= 0.95
    assert covering >= 0.85 * 2000


def test_the_sd_bound_follows_the_chi_square_quantiles() -> None:
    """sqrt(dof / chi2(1 - confidence, dof)) against the exact quantiles: 8 dof at 0.9 (3.490), 19 at 0.9
    (11.651), 8 at 0.95 (2.733); no bound without a degree of freedom."""
    assert calibration.sd_bound(8, 0.9) == pytest.approx(math.sqrt(8 / 3.490), rel=0.002)
    assert calibration.sd_bound(19, 0.9) == pytest.approx(math.sqrt(19 / 11.651), rel=0.002)
    assert calibration.sd_bound(8, 0.95) == pytest.approx(math.sqrt(8 / 2.733), rel=0.005)
    assert calibration.sd_bound(0, 0.9) == math.inf
    # every confidence an operator may set gives a finite floor from MIN_REQUESTS requests on
    assert all(math.isfinite(calibration.sd_bound(n - 1, 0.99)) for n in range(calibration.MIN_REQUESTS, 200))
    with pytest.raises(ValueError, match="at most 0.99"):
        calibration.CalibrationPolicy(confidence=0.995)


def test_the_estimator_takes_the_position_off_the_candidates_calls() -> None:
    base = [5.0] * 20
    kern = [5.35] * 20  # the same work, 0.35 ms more where the candidate runs
    null = [1.0] * 20
    assert estimate(base, kern, null).speedup == pytest.approx(4.0 / 4.35)
    assert estimate(base, kern, null, position_ms=0.35).speedup == pytest.approx(1.0)


@pytest.mark.parametrize("kept_own", [True, False], ids=["own-intervals-kept", "older-rows"])
def test_a_two_core_slot_a_a_bias_is_corrected_and_covered(kept_own: bool) -> None:
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
        floor = noise_floor([aa(r, kept_own) for r in calib])
        assert floor is not None and 0.25 < floor.position_ms < 0.35
        for _ in range(40):
            r = timing_row("w", request(), {}, [], [])
            plain += r["speedup_lo"] <= 1.0 <= r["speedup_hi"]
            r = timing_row("w", request(), {}, [], [], floor)
            folded += r["speedup_lo"] <= 1.0 <= r["speedup_hi"]
            assert r["calibration"]["requests"] == 8
    assert plain < 0.25 * 200
    assert folded >= 0.95 * 200


def aa(row: dict, kept_own: bool = True) -> AaRun:
    """A calibration run from a simulated report row (its own interval kept, or not, as older rows)."""
    lo, hi = row["speedup_within"] if kept_own else (None, None)
    return AaRun("w", "j", NOW, row["speedup"], row["baseline_ms"], row["kernel_ms"], lo, hi)


@pytest.mark.parametrize("between", [0.0, 0.002, 0.01])
def test_a_a_intervals_cover_whether_the_noise_is_within_requests_or_between_them(between: float) -> None:
    """Simulated A/A requests with 1% noise per call and a level between requests of 0, 0.2% or 1%:
    with a floor from 12 calibration requests (their own intervals kept), at least 95% of later
    requests' intervals contain 1.0, and where the noise is all within requests the interval is no
    wider than the floor and the own interval in quadrature (the rule before), and narrower on average."""
    covered = total = 0
    narrower = []
    for seed in range(6):
        rng = random.Random(100 + seed)

        def request(rng: random.Random = rng) -> Timing:
            level = math.exp(rng.gauss(0, between))
            b, c, n = [], [], []
            for _ in range(40):
                common = rng.gauss(1.0, 0.01)
                b.append(1.0 + 4.0 * common * math.exp(rng.gauss(0, 0.01)))
                c.append(1.0 + 4.0 * common * math.exp(rng.gauss(0, 0.01)) * level)
                n.append(1.0)
            return Timing(baseline_ms=b, kernel_ms=c, null_ms=n, stopped_by="max_reps", warmup_calls=3)

        floor = noise_floor([aa(timing_row("w", request(), {}, [], [])) for _ in range(12)])
        assert floor is not None
        for _ in range(30):
            r = timing_row("w", request(), {}, [], [], floor)
            covered += r["speedup_lo"] <= 1.0 <= r["speedup_hi"]
            total += 1
            s, hi = r["speedup"], r["speedup_within"][1]
            before = math.sqrt(math.log(hi / s) ** 2 + floor.half_width**2)
            after = math.log(r["speedup_hi"] / s)
            assert after <= before + 1e-12
            narrower.append(after / before)
    assert covered >= 0.95 * total
    if between == 0.0:
        assert sum(narrower) / len(narrower) < 0.9


def test_a_batch_mode_slot_calibrates_its_batch_gain_ratio_and_the_check_takes_it() -> None:
    """Each A/A request of a batch-mode workload also keeps its batch speedup over its per-call one
    (calibration.gain_key): single calls draw between requests more than batches, and a slot may have
    a ratio of its own. The batch-gain check then allows the slot's honest ratio (their median, times
    their floor) instead of the assumed floor on both figures: a template measured at 1.4x in batches
    against its single calls, flagged on an uncalibrated slot, is no flag where the calibration's
    templates measured 1.3-1.36x; a batch twice as fast as its calls still is."""

    def batch_row(batch_speedup: float, per_call_speedup: float, **floors: NoiseFloor | None) -> tuple[dict, list[str]]:
        per_call = const_timing(3.0, 3.0 / per_call_speedup, null=0.5, n=12)
        t = const_timing(3.0, 3.0 / batch_speedup, null=0.05, n=12, batch=8, per_call=per_call)
        flags: list[str] = []
        return timing_row("w", t, {}, flags, [], **floors), flags

    runs = []
    for k, ratio in enumerate([1.30, 1.33, 1.36, 1.31, 1.34]):
        row, _ = batch_row(1.0, 1.0 / ratio)
        report = EvalReport(
            task="t", holdout_probes=0, passed=1, total=1,
            workloads=[WorkloadRow(id="w", params={}, timed=True, verdict=Outcome.PASS, **row)],
        )  # fmt: skip
        runs += calibration.aa_runs(report, f"j{k}", NOW)
    assert sorted(r.workload for r in runs[:2]) == ["w", "w batch over one call"]
    found = floors(runs, NOW)
    gain = found[calibration.gain_key("w")]
    assert gain.corrected == pytest.approx(1.33) and gain.requests == 5 and gain.position_ms == 0.0
    assert gain.half_width == pytest.approx(calibration.prediction_half_width(gain.spread, 5, 0.9))
    assumed = calibration.assumed("w", 0.11)
    assert batch_row(1.0, 1.0 / 1.4, floor=assumed)[1]  # past 1.1 x 1.159: flagged uncalibrated
    assert batch_row(1.0, 1.0 / 1.4, floor=found["w"], gain=gain)[1] == []
    assert batch_row(2.0, 1.0, floor=found["w"], gain=gain)[1]
    # as kcoral calibrate and kcoral doctor show each (a ratio has no position cost)
    shown = floor_words("w", found["w"].document())
    assert shown.startswith("w: position cost +0.0000 ms per call, spread ")
    assert floor_words("w batch over one call", gain.document()).startswith(
        "w batch over one call: 1.3300x in an honest request, spread "
    )


def test_the_words_of_a_floor_say_how_much_time_its_requests_span() -> None:
    """A floor from one window of the host's time says so (on the dev VM 10 requests within a minute
    spread 1.1%, the 40 after them 3.8-4.1%); one whose requests span more does not; a floor document
    without the times (an older server's) shows none."""
    floor = {"spread": 0.011, "half_width": 0.0386, "requests": 10, "position_ms": 0.36, "first": 100.0}
    one = floor_words("standard", floor | {"last": 154.0})
    assert one.endswith("(10 requests over 54.0s, one window of the host's time: calibrate again minutes apart)")
    apart = floor_words("standard", floor | {"last": 100.0 + ONE_WINDOW_S + 300})
    assert apart.endswith("(10 requests over 15m00s)")
    assert floor_words("standard", floor).endswith("floor +-3.94% (10 requests)")
    for first, last in [(0.0, float("nan")), (0.0, float("inf")), (-1e308, 1e308), (200.0, 100.0), ("0", "9")]:
        odd = floor | {"first": first, "last": last}  # a hostile or broken server's times: no span, no error
        assert floor_words("standard", odd).endswith("floor +-3.94% (10 requests)"), (first, last)
    # a hostile or broken server's figures: shown as nan, never an error (kcoral calibrate once ended in
    # "internal error: ValueError" on a NaN count)
    for key, value in [("requests", float("nan")), ("requests", "10"), ("half_width", 1e308), ("spread", None)]:
        assert "requests" in floor_words("standard", floor | {key: value}), (key, value)
    assert floor_words("standard", floor | {"requests": float("inf")}).endswith("floor +-3.94% (? requests)")
    assert "floor +-inf%" in floor_words("standard", floor | {"half_width": 1e308})


def test_a_raw_basis_slots_position_is_measured_on_the_raw_scale_and_then_covered() -> None:
    """Simulated A/A requests whose protocol dominates (6 ms of empty call around 2 ms of work: the raw
    basis) on a slot whose candidate position costs 0.3 ms a call: the floor taken through aa_runs (from
    the reports' rows) must take 0.3 ms off, and the calibrated requests after it hold 1.0. From the
    net medians it took 2/8 of that off and the later requests sat below 1.0 (the CPU demo on the 2-core
    dev VM, bench/results/two-core-keeper-dev-vm)."""
    rng = random.Random(7)

    def request() -> Timing:
        b, c, n = [], [], []
        for _ in range(40):
            common = rng.gauss(1.0, 0.01)
            b.append(6.0 + 2.0 * common * math.exp(rng.gauss(0, 0.005)))
            c.append(6.0 + 2.0 * common * math.exp(rng.gauss(0, 0.005)) + 0.3)
            n.append(6.0)
        return Timing(baseline_ms=b, kernel_ms=c, null_ms=n, stopped_by="max_reps", warmup_calls=3)

    rows = [timing_row("w", request(), {}, [], []) for _ in range(8)]
    assert {r["basis"] for r in rows} == {"raw"}
    runs = [  # each request's report, as the server keeps an A/A request's (runner.calibrations)
        run
        for k, row in enumerate(rows)
        for run in calibration.aa_runs(
            SimpleNamespace(
                workloads=[parse(WorkloadRow, {"id": "w", "params": {}, "timed": True, "verdict": "PASS", **row})]
            ),
            f"j{k}",
            NOW,
        )  # type: ignore[arg-type]
    ]
    floor = noise_floor(runs)
    assert floor is not None and floor.position_ms == pytest.approx(0.3, abs=0.03)
    later = [timing_row("w", request(), {}, [], [], floor) for _ in range(10)]
    assert all(r["speedup_lo"] <= 1.0 <= r["speedup_hi"] for r in later)
