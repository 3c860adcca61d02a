"""Exact behaviour of the evaluation report (tasks.report): every field, both sides of every threshold and the
printed lines; pure, no Docker. Timings use exactly representable values so medians and speedups are exact."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pytest

from kcoral.protocol.printable import printable
from kcoral.tasks import batch_gain, calibration
from kcoral.tasks import report as report_module
from kcoral.tasks import report_lines as lines_module
from kcoral.tasks.documents import EvalReport, WorkloadRow, parse
from kcoral.tasks.evaluate import POSITION_UNCORRECTED
from kcoral.tasks.harness.schema import (
    Case,
    CaseFile,
    CaseResult,
    Outcome,
    Phase,
    SupervisorResult,
    Timing,
    TimingMethod,
)
from kcoral.tasks.harness.stats import net_samples
from kcoral.tasks.report import timing_row
from kcoral.tasks.report_lines import batch_line
from tests.tasks.documents import TIMING, const_timing


# The report is a typed document (tasks.documents.EvalReport); these tests check the JSON object it
# is written as, and run passed/report_lines on the typed report parsed back from it.
def build_report(*args: Any) -> dict[str, Any]:
    return report_module.build_report(*args).document()


def passed(doc: dict[str, Any]) -> bool:
    return parse(EvalReport, doc).ok


def report_lines(doc: dict[str, Any]) -> list[str]:
    return lines_module.report_lines(parse(EvalReport, doc))


TOL = {"atol": 1e-3, "rtol": 1e-3, "rms": 1e-4}


def two_timed() -> CaseFile:
    return CaseFile(
        "demo/t",
        "cpu",
        [
            Case("h0", Phase.HOLDOUT, "holdout0", {}, 1, False, TOL),
            Case("h1", Phase.HOLDOUT, "holdout1", {}, 2, False, TOL),
            Case("w0", Phase.WORKLOAD, "small", {"n": 1}, 3, True, TOL),
            Case("w1", Phase.WORKLOAD, "large", {"n": 2}, 4, True, TOL),
            Case("w2", Phase.WORKLOAD, "check", {"n": 3}, 5, False, TOL),
        ],
        sample_key="k",
        timing=TIMING,
    )


def all_pass(t0: Timing | None = None, t1: Timing | None = None, **over: Any) -> SupervisorResult:
    return SupervisorResult(
        [
            CaseResult("h0", Outcome.PASS),
            CaseResult("h1", Outcome.PASS),
            CaseResult("w0", Outcome.PASS, "", {}, t0 or const_timing(4.0, 1.0)),
            CaseResult("w1", Outcome.PASS, "", {}, t1 or const_timing(2.0, 2.0)),
            CaseResult("w2", Outcome.PASS),
        ],
        **over,
    )


# ----- build_report


def test_report_fields_and_summary() -> None:
    report = build_report({}, two_timed(), all_pass(cpu_watch="cgroup v2"))
    assert report["task"] == "demo/t" and report["holdout"] == "PASS" and report["holdout_probes"] == 2
    assert report["cpu_watch"] == "cgroup v2" and report["flags"] == []
    assert report["passed"] == 3 and report["total"] == 3 and passed(report)
    rows = {r["id"]: r for r in report["workloads"]}
    assert [r["id"] for r in report["workloads"]] == ["small", "large", "check"]
    assert rows["small"]["params"] == {"n": 1} and rows["small"]["timed"] is True
    assert rows["small"]["verdict"] == "PASS" and rows["small"]["reason"] == "" and rows["small"]["stats"] == {}
    assert (rows["small"]["speedup"], rows["small"]["speedup_lo"], rows["small"]["speedup_hi"]) == (4.0, 4.0, 4.0)
    assert rows["large"]["speedup"] == 1.0
    assert "speedup" not in rows["check"] and rows["check"]["timed"] is False
    # speedups 4 and 1: geometric mean 2; the mean call times are plain means of the rows' medians
    assert report["summary"] == {
        "speedup": pytest.approx(2.0),
        "speedup_lo": pytest.approx(2.0),
        "speedup_hi": pytest.approx(2.0),
        "baseline_ms": 3.0,
        "kernel_ms": 1.5,
        "min_speedup": 1.0,
        "max_speedup": 4.0,
    }


def test_flags_are_made_printable() -> None:
    report = build_report({}, two_timed(), all_pass(interference=["bad\x1b[2J"]))
    assert report["flags"] == ["bad\\x1b[2J"] and not passed(report)


def test_reason_keeps_newlines_and_escapes_controls() -> None:
    res = all_pass()
    res.cases[4] = CaseResult("w2", Outcome.FAIL, "y: wrong\nsecond\x07", {"y": {"rms_ratio": 0.5}})
    report = build_report({}, two_timed(), res)
    row = report["workloads"][2]
    assert row["reason"] == "y: wrong\nsecond\\x07" and row["stats"] == {"y": {"rms_ratio": 0.5}}
    assert row["verdict"] == "FAIL" and report["passed"] == 2 and not passed(report)


@pytest.mark.parametrize("holdout", [(Outcome.PASS, Outcome.FAIL), (Outcome.FAIL, Outcome.ERROR), (Outcome.PASS, None)])
def test_holdout_failure_names_the_first_failing_kind(holdout: tuple[Outcome, Outcome | None]) -> None:
    res = all_pass(interference=["noise"])
    res.cases = [CaseResult(f"h{i}", o) for i, o in enumerate(holdout) if o is not None] + res.cases[2:]
    report = build_report({}, two_timed(), res)
    first_bad = next(o for o in holdout if o is not Outcome.PASS)
    assert report["holdout"] == "FAIL"
    assert report["holdout_failure"] == (first_bad.value if first_bad else "ERROR")
    # the public workloads are still checked and reported, untimed; there is no score
    rows = report["workloads"]
    assert [(r["id"], r["verdict"], r.get("note")) for r in rows] == [
        ("small", "PASS", "not timed: the holdout failed"),
        ("large", "PASS", "not timed: the holdout failed"),
        ("check", "PASS", None),
    ]
    assert not [r for r in rows if "speedup" in r] and report["passed"] == 3 and report["total"] == 3
    assert report["flags"] == ["noise"] and "summary" not in report and not passed(report)


def test_missing_workload_is_an_error_that_was_not_run() -> None:
    res = all_pass()
    del res.cases[4]
    row = build_report({}, two_timed(), res)["workloads"][2]
    assert (row["verdict"], row["reason"]) == ("ERROR", "the case was not run")


@pytest.mark.parametrize("outcome", [Outcome.FAIL, Outcome.FLAKY, Outcome.ERROR])
def test_only_passing_timed_cases_get_a_speedup(outcome: Outcome) -> None:
    res = all_pass()
    res.cases[2] = CaseResult("w0", outcome, "r", {}, const_timing(4.0, 1.0))
    report = build_report({}, two_timed(), res)
    assert "speedup" not in report["workloads"][0] and "protocol_ms" not in report["workloads"][0]
    assert report["summary"]["speedup"] == 1.0 and report["passed"] == 2


def test_untimed_case_with_timing_gets_no_speedup() -> None:
    doc = two_timed()
    doc.cases[2].timed = False
    report = build_report({}, doc, all_pass())
    assert "speedup" not in report["workloads"][0] and report["summary"]["speedup"] == 1.0


def test_timed_case_without_timing_gets_no_speedup_and_no_summary() -> None:
    res = all_pass()
    res.cases[2].timing = None
    res.cases[3].timing = None
    report = build_report({}, two_timed(), res)
    assert all("speedup" not in r for r in report["workloads"]) and "summary" not in report
    assert passed(report)


def test_an_unmeasurable_row_makes_the_evaluation_inconclusive_not_failed() -> None:
    # w1: the kernel is not above the protocol's cost: no speedup, and no score for the evaluation (the
    # host's noise, or a call too short to time this way, is not the submission's failure)
    report = build_report({}, two_timed(), all_pass(t1=const_timing(2.0, 0.0)))
    assert "summary" not in report and report["flags"] == []
    assert report["inconclusive"][0].startswith("large: a median call time is not above the protocol's fixed cost")
    assert parse(EvalReport, report).correct and not passed(report)


def test_summary_extremes_are_of_the_point_speedups_not_the_bounds() -> None:
    # w0: baseline net 4 and 5 in turn by block, kernel net 1: the point is 4.5, the interval around it
    t0 = Timing(
        baseline_ms=[5.0, 5.0, 6.0, 6.0] * 3,
        kernel_ms=[2.0] * 12,
        null_ms=[1.0] * 12,
        stopped_by="stable",
        warmup_calls=0,
    )
    report = build_report({}, two_timed(), all_pass(t0=t0))
    row = report["workloads"][0]
    assert row["speedup"] == 4.5 and row["speedup_lo"] < 4.5 < row["speedup_hi"]
    assert report["summary"]["max_speedup"] == 4.5 and report["summary"]["min_speedup"] == 1.0
    t1 = Timing(
        baseline_ms=[2.0, 2.0, 2.5, 2.5] * 3,
        kernel_ms=[3.0] * 12,
        null_ms=[1.0] * 12,
        stopped_by="stable",
        warmup_calls=0,
    )
    report = build_report({}, two_timed(), all_pass(t1=t1))
    row = report["workloads"][1]
    assert row["speedup"] == 0.625 and row["speedup_lo"] < 0.625 < row["speedup_hi"]
    assert report["summary"]["min_speedup"] == 0.625 and report["summary"]["max_speedup"] == 4.0


def test_a_speedup_too_uncertain_to_score_makes_the_evaluation_inconclusive_not_failed() -> None:
    """Net baseline 1 or 4 in turn by block against a kernel of 2: the interval runs from 0.5 to 2.0, wider
    than inconclusive_ratio: no score, not the submission's fault."""
    noisy = Timing(
        baseline_ms=[2.0, 2.0, 5.0, 5.0] * 3,
        kernel_ms=[3.0] * 12,
        null_ms=[1.0] * 12,
        stopped_by="budget",
        warmup_calls=0,
    )
    doc = build_report({}, two_timed(), all_pass(t1=noisy))
    assert "summary" not in doc and len(doc["inconclusive"]) == 1 and doc["inconclusive"][0].startswith("large: ")
    report = parse(EvalReport, doc)
    assert report.correct and not report.ok
    lines = lines_module.report_lines(report)
    (why,) = doc["inconclusive"]
    assert [line for line in lines if line.startswith("inconclusive: ")] == [f"inconclusive: {why}"]
    assert "interval [0.5000, 2.0000]" in why and not [x for x in lines if x.startswith("baseline:")]
    assert "the host was too noisy to time it (the submission's interquartile range 0% of the median; " in why


def test_a_submission_whose_own_times_vary_is_told_so_not_blamed_on_the_host() -> None:
    """The baseline steady, the submission's net time 1 or 8 in turn by block: the submission's doing."""
    unsteady = Timing(
        baseline_ms=[3.0] * 12,
        kernel_ms=[2.0, 2.0, 9.0, 9.0] * 3,
        null_ms=[1.0] * 12,
        stopped_by="budget",
        warmup_calls=0,
    )
    doc = build_report({}, two_timed(), all_pass(t1=unsteady))
    (why,) = doc["inconclusive"]
    assert "the submission's own call times vary too much to score (interquartile range " in why
    assert "the baseline's, timed alongside it, 0%" in why and "host" not in why
    row = doc["workloads"][1]
    assert row["kernel_spread"] > 1 and row["baseline_spread"] == 0


# ----- net samples and the timing row


def test_net_samples_pair_by_iteration_and_stop_at_the_shorter() -> None:
    assert net_samples([3.0, 5.0, 7.0], [1.0, 2.0]) == [2.0, 3.0]
    assert net_samples([3.0], [1.0, 2.0]) == [2.0]


def test_timing_row_values() -> None:
    t = const_timing(
        3.0, 1.5, null=0.5, n=12, idle_cpu_ms=0.25, idle_cpu_share=0.125, early_cpu_ms=0.75, early_cpu_share=0.0625
    )
    flags: list[str] = []
    row = timing_row("w", t, {}, flags, [])
    assert flags == []
    assert row == {
        "baseline_ms": 3.0,
        "kernel_ms": 1.5,
        "speedup": 2.0,
        "speedup_lo": 2.0,
        "speedup_hi": 2.0,
        "samples": 12,
        "speedup_halves": None,  # too few samples for halves of their own (6 blocks, each half needs 5)
        "drifted": False,
        "basis": "net",
        "protocol_share": 0.25,  # 0.5 ms of the kernel's 2 ms raw call
        "disturbed": 0,
        "baseline_spread": 0.0,
        "kernel_spread": 0.0,
        "stopped_by": "stable",
        "protocol_ms": 0.5,
        "idle_cpu_ms": 0.25,
        "idle_cpu_share": 0.125,
        "early_cpu_ms": 0.75,
        "early_cpu_share": 0.0625,
        "shared_core_share": 0.0,
        "speedup_within": [2.0, 2.0],
        "calibration": None,
        "assumed_floor": None,
    }


def test_spread_is_the_interquartile_range_over_the_median() -> None:
    assert report_module.spread([1.0, 2.0, 3.0, 4.0, 5.0]) == pytest.approx(3.0 / 3.0)
    assert report_module.spread([2.0] * 10) == 0.0 and report_module.spread([1.0, 9.0]) == 0.0


@pytest.mark.parametrize(("nb", "nk"), [(2, 5), (5, 2), (2, 2)])
def test_timing_row_needs_three_samples(nb: int, nk: int) -> None:
    t = const_timing(3.0, 1.5, n=5)
    t.baseline_ms, t.kernel_ms = t.baseline_ms[:nb], t.kernel_ms[:nk]
    flags: list[str] = []
    unmeasured: list[str] = []
    assert timing_row("w", t, {}, flags, unmeasured) == {}
    assert unmeasured == [f"w: too few timing samples ({min(nb, nk)})"] and flags == []


@pytest.mark.parametrize("n", [3, 11])
def test_timing_row_with_fewer_than_six_blocks_is_unmeasured(n: int) -> None:
    """3 iterations make 1 block, 11 make 5: too few for a 95% interval (stats.min_samples), whose whole
    range (of one block: a width of 0) would otherwise pass for a measured, stable speedup."""
    flags: list[str] = []
    unmeasured: list[str] = []
    row = timing_row("w", const_timing(3.0, 1.5, n=n), {}, flags, unmeasured)
    assert row == {"protocol_ms": 1.0, "disturbed": 0} and flags == []
    assert unmeasured == [
        f"w: too few timing samples ({n // 2} pairs of consecutive iterations left; an interval needs 6)"
    ]


def test_timing_row_with_exactly_six_blocks_is_measured() -> None:
    flags: list[str] = []
    unmeasured: list[str] = []
    row = timing_row("w", const_timing(3.0, 1.5, n=12), {}, flags, unmeasured)
    assert flags == [] and unmeasured == [] and row["speedup"] == 2.0 and row["samples"] == 12


@pytest.mark.parametrize(("base", "kern"), [(0.0, 1.0), (1.0, 0.0), (-0.5, 1.0), (1.0, -0.5)])
def test_timing_row_median_not_above_the_protocol_cost(base: float, kern: float) -> None:
    flags: list[str] = []
    row = timing_row("w", const_timing(base, kern, null=0.5), {}, [], flags)
    assert row == {"protocol_ms": 0.5}
    assert flags == [
        "w: a median call time is not above the protocol's fixed cost (0.5000 ms): "
        "the call is too short to measure this way"
    ]


def unclear(values: list[float], null: float = 0.25) -> Timing:
    return Timing(
        baseline_ms=[2.0 + null] * len(values),
        kernel_ms=[v + null for v in values],
        null_ms=[null] * len(values),
        stopped_by="max",
        warmup_calls=0,
    )


# the protocol's cost (0.25 ms) at most half of either side's median raw call: the net basis, where a
# call can come out no longer than the protocol's cost
CLEAR_FLAG = "w: the call times do not stand clear of the protocol's fixed cost (0.2500 ms): no speedup can be given"


def test_timing_row_interval_reaching_infinity() -> None:
    # kernel median 0.25 > 0, but two of the six blocks' candidate calls are not above zero: their ratio is
    # inf, and so is the interval's upper bound
    flags: list[str] = []
    row = timing_row("w", unclear([0.25] * 8 + [-0.25] * 4), {}, [], flags)
    assert row == {"protocol_ms": 0.25} and flags == [CLEAR_FLAG]


def test_timing_row_interval_reaching_zero() -> None:
    # baseline median 0.25 > 0, but two of the six blocks' baseline calls are not above zero: the lower bound is 0
    t = Timing(
        baseline_ms=[0.5] * 8 + [0.0] * 4, kernel_ms=[0.75] * 12, null_ms=[0.25] * 12, stopped_by="max", warmup_calls=0
    )
    flags: list[str] = []
    assert timing_row("w", t, {}, [], flags) == {"protocol_ms": 0.25} and flags == [CLEAR_FLAG]


def test_timing_row_lower_bound_exactly_zero_is_refused() -> None:
    # baseline median 0.25 > 0 (net); each of the six blocks holds a baseline call of net 0: its ratio, and the
    # speedup, is 0, and so is the interval's lower bound
    t = Timing(
        baseline_ms=[0.25, 0.75] * 6, kernel_ms=[0.75] * 12, null_ms=[0.25] * 12, stopped_by="max", warmup_calls=0
    )
    flags: list[str] = []
    assert timing_row("w", t, {}, [], flags) == {"protocol_ms": 0.25} and flags == [CLEAR_FLAG]


@pytest.mark.parametrize(("floor", "flagged"), [(None, False), (0, False), (0.5, False), (0.5000001, True), (2, True)])
def test_physical_floor_both_sides(floor: float | None, flagged: bool) -> None:
    flags: list[str] = []
    manifest = {} if floor is None else {"floor_ms": floor}
    row = timing_row("w", const_timing(1.0, 0.5, null=0.25), manifest, flags, [])
    assert row["kernel_ms"] == 0.5
    assert flags == ([f"w: kernel time 0.5000 ms is below the physical floor {floor} ms"] if flagged else [])


@pytest.mark.parametrize(("limit", "flagged"), [(None, False), (0, False), (2, False), (1.99, True), (1, True)])
def test_speedup_limit_both_sides(limit: float | None, flagged: bool) -> None:
    flags: list[str] = []
    manifest = {} if limit is None else {"max_speedup": limit}
    row = timing_row("w", const_timing(1.0, 0.5, null=0.25), manifest, flags, [])
    assert row["speedup"] == 2.0
    assert flags == ([f"w: speedup 2.00x is above this task's limit of {limit}x"] if flagged else [])


def test_floor_and_limit_both_flag_and_keep_the_row() -> None:
    flags: list[str] = []
    row = timing_row("w", const_timing(1.0, 0.5, null=0.25), {"floor_ms": 1, "max_speedup": 1}, flags, [])
    assert len(flags) == 2 and row["speedup"] == 2.0


def test_flags_reach_the_report_and_fail_it() -> None:
    report = build_report({"floor_ms": 1.5}, two_timed(), all_pass())
    assert report["flags"] == ["small: kernel time 1.0000 ms is below the physical floor 1.5 ms"]
    assert report["passed"] == report["total"] and not passed(report)


# ----- printable and passed


#: an emoji joined by a zero-width joiner, and Hebrew: shown as they are
KEPT = "\U0001f468\u200d\U0001f469 \u05d0\u05d1"


@pytest.mark.parametrize(
    ("text", "plain", "with_newlines"),
    [
        ("a\tb", "a\tb", "a\tb"),
        ("a\nb", "a\\x0ab", "a\nb"),
        ("\x00\x1f \x7e", "\\x00\\x1f ~", "\\x00\\x1f ~"),
        ("\x7f\x80\x9f\xa0é", "\\x7f\\x80\\x9f\xa0é", "\\x7f\\x80\\x9f\xa0é"),
        ("\r\x1b", "\\x0d\\x1b", "\\x0d\\x1b"),
        # shown in another order than written ("Trojan Source"), or broken into lines, where drawn
        ("d\u202etxt.exe", "d\\u202etxt.exe", "d\\u202etxt.exe"),
        ("a\u2066b\u2069\u200f\u061c", "a\\u2066b\\u2069\\u200f\\u061c", "a\\u2066b\\u2069\\u200f\\u061c"),
        ("x\u2028y\u2029", "x\\u2028y\\u2029", "x\\u2028y\\u2029"),
        ("\ud800", "\\ud800", "\\ud800"),
        (KEPT, KEPT, KEPT),
    ],
)
def test_printable(text: str, plain: str, with_newlines: str) -> None:
    assert printable(text) == plain
    assert printable(text, newlines=True) == with_newlines


@pytest.mark.parametrize(
    ("holdout", "passed_", "total", "flags", "ok"),
    [("PASS", 2, 2, [], True), ("FAIL", 2, 2, [], False), ("PASS", 1, 2, [], False), ("PASS", 2, 2, ["x"], False)],
)
def test_passed(holdout: str, passed_: int, total: int, flags: list[str], ok: bool) -> None:
    doc = {"task": "t", "holdout_probes": 1, "holdout": holdout, "passed": passed_, "total": total, "flags": flags}
    assert passed(doc) is ok


# ----- printed lines


def test_report_lines_of_a_passing_report() -> None:
    res = all_pass()
    res.cases[4] = CaseResult(
        "w2",
        Outcome.PASS,
        "",
        {
            "y": {"rms_ratio": 1.5e-5, "max_abs_err": 0.000123456},
            "z": {},
            "w": {"max_abs_err": 2.0},
            "v": {"rms_ratio": 2e-3},
        },
    )
    lines = report_lines(build_report({}, two_timed(), res))
    assert lines == [
        "holdout correctness: PASS",
        "workload " + "small".ljust(20) + " timed PASS (STABLE)",
        "    baseline 4.000000 ms  kernel 1.000000 ms  speedup 4.0000x [95% CI 4.0000, 4.0000]  n=12 (stable; "
        "protocol 1.0000 ms per call subtracted)",
        "workload " + "large".ljust(20) + " timed PASS (STABLE)",
        "    baseline 2.000000 ms  kernel 2.000000 ms  speedup 1.0000x [95% CI 1.0000, 1.0000]  n=12 (stable; "
        "protocol 1.0000 ms per call subtracted)",
        # an empty stats entry is skipped; a missing figure prints as 0
        "workload " + "check".ljust(20) + " check PASS  y rms=1.50e-05 max=0.000123  w rms=0.00e+00 max=2"
        "  v rms=2.00e-03 max=0",
        lines_module.UNCALIBRATED,
        "baseline: 3.000000 ms kernel: 1.500000 ms speedup: 2.0000x (95% CI 2.0000-2.0000; min 1.0000x max 4.0000x): "
        "faster against the baseline",
        "passed: 3/3",
    ]


def test_report_lines_of_failures_and_flags() -> None:
    res = all_pass(interference=["cpu"])
    res.cases[2] = CaseResult("w0", Outcome.FAIL, "y: 3 elements out of tolerance\nmore detail")
    res.cases[3].timing = None
    res.cases[4] = CaseResult("w2", Outcome.ERROR, "")
    lines = report_lines(build_report({}, two_timed(), res))
    assert lines == [
        "holdout correctness: PASS",
        "workload " + "small".ljust(20) + " timed FAIL",
        "    first failure: y: 3 elements out of tolerance",
        "    more detail",
        "workload " + "large".ljust(20) + " timed PASS (STABLE)",
        "workload " + "check".ljust(20) + " check ERROR",
        "flagged: cpu",
        "passed: 1/3",
    ]


def test_report_lines_of_a_failed_holdout() -> None:
    res = all_pass(interference=["a", "b"])
    res.cases[0] = CaseResult("h0", Outcome.FAIL, "probe-detail")
    res.cases[4] = CaseResult("w2", Outcome.ERROR, "TypeError: bad\n  solution.py, line 3, in setup")
    lines = report_lines(build_report({}, two_timed(), res))
    assert lines == [
        "holdout correctness: FAIL (wrong values on a secret probe: its shapes and values are not given; "
        "the public workloads below were checked, not timed)",
        "workload " + "small".ljust(20) + " timed PASS (not timed: the holdout failed)",
        "workload " + "large".ljust(20) + " timed PASS (not timed: the holdout failed)",
        "workload " + "check".ljust(20) + " check ERROR",
        "    first failure: TypeError: bad",
        "      solution.py, line 3, in setup",
        "flagged: a",
        "flagged: b",
        "passed: 2/3 (the holdout failed: no score)",
    ]
    assert "probe-detail" not in "\n".join(lines)


def test_an_error_is_printed_once_and_later_workloads_point_to_it() -> None:
    res = all_pass()
    error = "\n".join(["AttributeError: no setup"] + [f"line {i}" for i in range(20)])
    res.cases[2:] = [CaseResult(f"w{i}", Outcome.ERROR, error) for i in range(3)]
    lines = report_lines(build_report({}, two_timed(), res))
    assert lines[1:4] == [
        "workload " + "small".ljust(20) + " timed ERROR",
        "    first failure: AttributeError: no setup",
        "    line 0",
    ]
    assert lines[14:] == [
        "    (9 more lines in report.json)",
        "workload " + "large".ljust(20) + " timed ERROR",
        "    the same failure as workload small",
        "workload " + "check".ljust(20) + " check ERROR",
        "    the same failure as workload small",
        "passed: 0/3",
    ]


def test_the_receipts_raw_samples_are_the_supervisors() -> None:
    """sample_times: each timed workload's raw samples, as the supervisor measured them (no protocol
    subtracted), for the receipt; check workloads and a failed holdout give none."""
    res = all_pass()
    samples = report_module.sample_times(two_timed(), res)
    assert set(samples) == {"small", "large"}
    timing = res.cases[2].timing
    assert timing is not None
    small = samples["small"]
    assert (small.baseline_ms, small.kernel_ms, small.protocol_ms) == (
        timing.baseline_ms, timing.kernel_ms, timing.null_ms
    )  # fmt: skip
    assert small.disturbed is None and small.judge_wait_ms is None  # none measured: absent
    marked = disturbed_timing([False, True, False, False])
    res.cases[2].timing = marked
    again = report_module.sample_times(two_timed(), res)["small"]
    assert (again.disturbed, again.judge_wait_ms) == (marked.disturbed, marked.judge_wait_ms)


def test_with_lines_keeps_the_printed_lines_in_the_report() -> None:
    """report.json carries the lines the log ends with: with_lines puts them in."""
    typed = report_module.build_report({}, two_timed(), all_pass())
    assert typed.lines == []
    kept = lines_module.with_lines(typed)
    assert kept.lines == lines_module.report_lines(typed) and kept.lines[0] == "holdout correctness: PASS"
    assert kept.document()["lines"] == kept.lines


def test_a_check_reports_the_workloads_without_a_holdout_or_a_score() -> None:
    res = all_pass()
    res.cases = res.cases[2:]  # a check runs the workloads only, untimed
    for case in res.cases:
        case.timing = None
    report = report_module.build_report({}, two_timed(), res, check=True)
    assert report.holdout is None and report.check and report.summary is None and report.ok
    lines = lines_module.report_lines(report)
    assert lines[0] == "check: the public workloads' correctness only (no holdout, nothing timed, no score)"
    assert lines[-1] == "passed: 3/3 (a check: no score)"


def test_a_measurement_that_drifted_says_so_and_its_interval_covers_both_halves() -> None:
    null = [1.0] * 20
    steady = Timing([3.0, 3.02] * 10, [2.0, 2.02] * 10, null, "stable", 3)
    drifted = Timing([3.0, 3.02] * 10, [3.0, 3.02] * 5 + [1.5, 1.52] * 5, null, "max_reps", 3)
    report = build_report({}, two_timed(), all_pass(steady, drifted))
    rows = {r["id"]: r for r in report["workloads"]}
    assert rows["small"]["drifted"] is False and rows["small"]["speedup_halves"] == [pytest.approx(2.0, rel=0.01)] * 2
    large = rows["large"]
    second = (2.0 / 0.5 * 2.02 / 0.52) ** 0.5  # each block of the second half: the two orders' geometric mean
    assert large["drifted"] is True and large["speedup_halves"] == [1.0, pytest.approx(second)]
    assert large["speedup_lo"] <= 1.0 and large["speedup_hi"] >= 3.9
    lines = report_lines(report)
    at = lines.index(next(line for line in lines if line.startswith("workload large")))
    assert lines[at + 2] == (
        "    the host's speed changed while it was timed: the first half of the samples gave 1.0000x, "
        "the second 3.9419x (the interval covers both)"
    )
    assert not any("speed changed" in line for line in lines[:at])


# ----- the estimate's basis and the disturbed iterations


def test_a_speedup_taken_raw_says_so_in_one_clause() -> None:
    """The protocol (8 ms) is two thirds of a call: the speedup is the raw ratio, the times stay net."""
    raw = Timing([12.5] * 12, [12.0] * 12, [8.0] * 12, "stable", 3)
    report = build_report({}, two_timed(), all_pass(t0=raw))
    row = report["workloads"][0]
    assert (row["basis"], row["speedup"], row["protocol_share"]) == ("raw", 12.5 / 12.0, pytest.approx(8 / 12))
    assert (row["baseline_ms"], row["kernel_ms"], row["disturbed"]) == (4.5, 4.0, 0)
    assert report["workloads"][1]["basis"] == "net"
    lines = report_lines(report)
    assert lines[2] == (
        "    baseline 4.500000 ms  kernel 4.000000 ms  speedup 1.0417x [95% CI 1.0417, 1.0417]  n=12 (stable; "
        "protocol 8.0000 ms, 67% of a call: raw ratio)"
    )
    assert "raw ratio" not in lines[4]


def disturbed_timing(marks: list[bool], waits: list[float] | None = None) -> Timing:
    """Net baseline 4 and kernel 1 (null 1), but 13 ms more on the baseline's calls of the marked iterations."""
    n = len(marks)
    return Timing(
        baseline_ms=[5.0 + (13.0 if m else 0.0) for m in marks],
        kernel_ms=[2.0] * n,
        null_ms=[1.0] * n,
        stopped_by="stable",
        warmup_calls=3,
        judge_wait_ms=waits if waits is not None else [0.5 if m else 0.0 for m in marks],
        disturbed=marks,
    )


def test_disturbed_iterations_are_left_out_of_every_figure_and_counted() -> None:
    marks = [False] * 12 + [True, False]  # 1 of 14: iteration 12, and its block's partner 13, are left out
    report = build_report({}, two_timed(), all_pass(t0=disturbed_timing(marks)))
    row = report["workloads"][0]
    assert (row["speedup"], row["speedup_lo"], row["speedup_hi"]) == (4.0, 4.0, 4.0)
    assert (row["baseline_ms"], row["kernel_ms"], row["samples"], row["disturbed"]) == (4.0, 1.0, 14, 1)
    assert report["inconclusive"] == [] and passed(report)
    assert report_lines(report)[2].endswith(
        "n=14 (stable; 1 disturbed left out; protocol 1.0000 ms per call subtracted)"
    )


def test_a_quarter_of_the_iterations_disturbed_is_still_measured() -> None:
    # 6 of 24, one in each of 6 blocks: a quarter, under disturbed_limit; 6 blocks are left
    marks = [True, False, False, True, False, False, False, False] * 3
    report = build_report({}, two_timed(), all_pass(t0=disturbed_timing(marks)))
    assert report["workloads"][0]["speedup"] == 4.0 and report["workloads"][0]["disturbed"] == 6 and passed(report)


def test_more_than_half_the_iterations_disturbed_leaves_the_workload_unmeasured() -> None:
    marks = [True, False, True, True, False, True, False, True]  # 5 of 8
    waits = [0.5, 0.0, 0.6, 0.75, 0.0, 2.0, 0.0, 0.9]
    doc = build_report({}, two_timed(), all_pass(t0=disturbed_timing(marks, waits)))
    row = doc["workloads"][0]
    assert "speedup" not in row and row["disturbed"] == 5 and row["protocol_ms"] == 1.0
    assert doc["inconclusive"] == [
        "small: 5 of 8 timed iterations were disturbed (the judge's side lost a median 0.750 ms each to waiting "
        "for a CPU or to interrupts), more than 50%: the host was too busy to time it (evaluate again)"
    ]
    report = parse(EvalReport, doc)
    assert "summary" not in doc and report.correct and not report.ok  # inconclusive, never a gain
    # a result without the waits still names the count
    bare = build_report({}, two_timed(), all_pass(t0=disturbed_timing(marks, [])))
    assert bare["inconclusive"] == [
        "small: 5 of 8 timed iterations were disturbed, more than 50%: the host was too busy to time it "
        "(evaluate again)"
    ]


def test_a_candidate_core_shared_with_others_work_leaves_the_workload_unmeasured() -> None:
    """One busy loop beside the CPU demo on a 2-core host ran on the candidate's core (the scheduler's
    least busy one) and slowed only the candidate: A/A requests gave 0.77-0.81x with intervals below
    1.0. Over TimingMethod.shared_core_share of its calls' time the workload is not scored; at the limit it is."""
    limit = TimingMethod().shared_core_share
    busy = build_report(
        {}, two_timed(), all_pass(t0=const_timing(4.0, 1.0, shared_core_ms=900.0, shared_core_share=0.6))
    )
    assert "speedup" not in busy["workloads"][0] and busy["workloads"][0]["shared_core_share"] == 0.6
    assert busy["inconclusive"] == [
        "small: other work on the host ran on the submission's core during 60% of its timed calls (900 ms), more "
        f"than {limit:.0%}: its times are not its own (evaluate again on a quieter host)"
    ]
    report = parse(EvalReport, busy)
    assert "summary" not in busy and report.correct and not report.ok
    quiet = build_report({}, two_timed(), all_pass(t0=const_timing(4.0, 1.0, shared_core_share=limit)))
    assert quiet["inconclusive"] == [] and quiet["workloads"][0]["shared_core_share"] == limit and passed(quiet)
    # a few of the core's 10 ms clock ticks over a short measurement: not enough to tell (the calls' 1.2 s
    # hold them: others_slack widens the interval by them)
    few = const_timing(400.0, 100.0, shared_core_ms=TimingMethod().shared_core_ms - 10.0, shared_core_share=0.3)
    short = build_report({}, two_timed(), all_pass(t0=few))
    assert short["inconclusive"] == [] and passed(short)
    enough = const_timing(400.0, 100.0, shared_core_ms=TimingMethod().shared_core_ms, shared_core_share=0.3)
    assert build_report({}, two_timed(), all_pass(t0=enough))["inconclusive"]


def test_the_judges_rules_are_the_requests_timing_method() -> None:
    """The rules that decide whether a workload is scored are the case file's TimingMethod (an operator's
    ``timing_NAME``, a task's ``timing``), not constants: the same times are refused under the defaults
    and scored under a method that allows them, and the reverse."""
    import dataclasses

    def under(t: Timing, **rules: Any) -> dict[str, Any]:
        cases = dataclasses.replace(two_timed(), timing=dataclasses.replace(TIMING, **rules))
        return build_report({}, cases, all_pass(t0=t))

    busy = const_timing(400.0, 100.0, n=40, shared_core_ms=900.0, shared_core_share=0.6)
    assert under(busy)["inconclusive"] and not under(busy, shared_core_share=0.7)["inconclusive"]
    assert under(busy, shared_core_ms=1000.0)["inconclusive"] == []
    disturbed = const_timing(4.0, 1.0, n=8, disturbed=[True] * 5 + [False] * 3)
    assert under(disturbed)["inconclusive"][0].startswith("small: 5 of 8 timed iterations were disturbed")
    lenient = under(disturbed, disturbed_limit=0.7)["inconclusive"]
    assert not any("disturbed" in why for why in lenient)
    wide = const_timing(4.0, 1.0, null=0.5)
    wide.kernel_ms = [1.5, 1.5, 3.5, 3.5] * 3  # net blocks of 3.5/1 and 3.5/3: the interval spans x3.0
    assert under(wide)["inconclusive"] == [] and "summary" in under(wide)
    strict = under(wide, inconclusive_ratio=1.5)
    assert (
        strict["inconclusive"][0].startswith("small: the speedup's 95% interval")
        and "x1.5 from end" in (strict["inconclusive"][0])
    )
    # the raw basis from a protocol share of 1/4 on (the default: from 1/2)
    assert under(const_timing(4.0, 2.0, null=1.0))["workloads"][0]["basis"] == "net"
    assert under(const_timing(4.0, 2.0, null=1.0), protocol_dominant=0.25)["workloads"][0]["basis"] == "raw"


def test_a_method_that_cannot_be_followed_is_refused_wherever_it_is_set() -> None:
    """min_reps above max_reps, a share outside 0-1, a ratio under 1: a ValueError (an operator's
    setting: exit 2; a task's manifest: the task not loaded; a case file: a DataError)."""
    import dataclasses

    for bad in ({"min_reps": 301}, {"shared_core_share": 1.5}, {"disturbed_limit": -0.1}, {"inconclusive_ratio": 0.9}):
        with pytest.raises(ValueError) as info:
            dataclasses.replace(TimingMethod(), **bad)
        assert str(info.value).startswith(f"{next(iter(bad))}: "), info.value


def test_a_report_written_before_the_basis_and_disturbed_fields_still_parses() -> None:
    doc = build_report({}, two_timed(), all_pass())
    for row in doc["workloads"]:
        for key in ("basis", "protocol_share", "disturbed"):
            row.pop(key, None)
    report = parse(EvalReport, doc)
    assert report.workloads[0].basis is None and report.workloads[0].disturbed is None
    assert lines_module.report_lines(report)[2].endswith("n=12 (stable; protocol 1.0000 ms per call subtracted)")


def test_the_gpus_clock_and_heat_reach_the_row_and_a_line() -> None:
    t = const_timing(3.0, 1.5, null=0.5, n=12)
    t.sm_clock_mhz, t.temperature_c = [1980, 1965, 1980, 1755] + [1980] * 8, [41, 42, 44, 43] + [42] * 8
    t.throttled, t.cooled_s = [False, False, False, True] + [False] * 8, 2.5
    row = timing_row("w", t, {}, [], [])
    assert (row["gpu_clock_mhz"], row["gpu_clock_min_mhz"], row["gpu_temp_c"]) == (1980, 1755, 44)
    assert (row["throttled"], row["cooled_s"]) == (1, 2.5)
    line = lines_module.gpu_line(parse(WorkloadRow, {"id": "w", "params": {}, "timed": True, "verdict": "PASS", **row}))
    assert line == (
        "GPU while timed: SM clock median 1980 MHz (lowest 1755), up to 44 C; 1 iterations with the GPU slowed "
        "for heat or power, left out; let cool 2.5 s first"
    )
    assert "gpu_clock_mhz" not in timing_row("w", const_timing(3.0, 1.5, null=0.5, n=12), {}, [], [])


def _one_row_report(row: dict[str, Any]) -> list[str]:
    """The printed report of one timed workload's ``row``, the holdout passed."""
    workload = {"id": "w", "params": {}, "timed": True, "verdict": "PASS", **row}
    doc = {"task": "t", "holdout": "PASS", "holdout_probes": 0, "workloads": [workload], "flags": []}
    return report_lines({**doc, "passed": 1, "total": 1})


def _batch_row(batch_speedup: float, per_call: Timing | None) -> tuple[dict[str, Any], list[str]]:
    """A batch-mode row: the batch's calls at ``batch_speedup``, with ``per_call`` as its per-call check."""
    t = const_timing(3.0, 3.0 / batch_speedup, null=0.05, n=12, batch=8, per_call=per_call)
    flags: list[str] = []
    return timing_row("w", t, {}, flags, []), flags


def test_a_batch_row_says_its_mode_and_carries_the_per_call_check() -> None:
    row, flags = _batch_row(1.0, const_timing(3.0, 3.0, null=0.5, n=12))
    assert (row["batch"], row["per_call_speedup"], flags) == (8, [1.0, 1.0, 1.0], [])
    lines = _one_row_report(row)
    assert "n=12 batches of 8 calls (stable; protocol 0.0500 ms per call subtracted)" in lines[2], lines
    assert lines[3] == (
        "    timed in batches of 8 calls back to back, each on fresh inputs, every output checked; "
        "one call at a time: 1.0000x [1.0000, 1.0000]"
    )
    # a per-call check too short for an interval of its own: said, and no flag can come of it
    row, flags = _batch_row(2.0, const_timing(3.0, 3.0, null=0.5, n=4))
    assert row["per_call_speedup"] is None and flags == []
    # per call: no per_call_speedup key at all
    assert "batch" not in timing_row("w", const_timing(3.0, 1.5), {}, [], [])


def test_a_graph_replayed_batch_row_says_so() -> None:
    t = const_timing(3.0, 3.0, null=0.05, n=12, batch=8, graph=True, per_call=const_timing(3.0, 3.0, null=0.5))
    row = timing_row("w", t, {}, [], [])
    assert (row["batch"], row["graph"]) == (8, True)
    assert batch_line(WorkloadRow(id="w", params={}, timed=True, verdict="PASS", **row)) == (
        "timed in batches of 8 calls captured once in a CUDA graph and replayed, each call on fresh inputs, every "
        "output checked; one call at a time (each its own graph): 1.0000x [1.0000, 1.0000]"
    )


def test_a_batch_the_gpus_memory_made_smaller_says_so() -> None:
    """A batch fitted to the card (tasks.harness.memoryfit) says the task's batch and the one used; one
    that did not hold two calls says the case was timed one call at a time."""
    t = const_timing(3.0, 3.0, null=0.05, n=12, batch=3, batch_asked=8, graph=True)
    row = timing_row("w", t, {}, [], [])
    assert (row["batch"], row["batch_asked"]) == (3, 8)
    assert batch_line(WorkloadRow(id="w", params={}, timed=True, verdict="PASS", **row)).startswith(
        "timed in batches of 3 calls captured once in a CUDA graph and replayed, each call on fresh inputs, every "
        "output checked (the task asks for 8: the GPU's free memory held 3)"
    )
    row = timing_row("w", const_timing(3.0, 3.0, null=0.5, n=12, batch=0, batch_asked=8), {}, [], [])
    assert "batch" not in row and row["batch_asked"] == 8
    lines = _one_row_report(row)
    assert (
        "    timed one call at a time: the task asks for batches of 8 calls, and the GPU's free memory did not hold "
        "two calls' buffers"
    ) in lines, lines


@pytest.mark.parametrize(("batch_speedup", "flagged"), [(1.09, False), (1.11, True), (3.0, True)])
def test_calls_far_faster_together_than_apart_are_flagged(batch_speedup: float, flagged: bool) -> None:
    """The per-call check at 1.0x: a batch speedup above batch_gain_limit (1.10) of it is work done across
    calls (one call doing a later call's work ahead, or all at once), not speed."""
    row, flags = _batch_row(batch_speedup, const_timing(3.0, 3.0, null=0.5, n=12))
    assert row["speedup"] == pytest.approx(batch_speedup)
    assert bool(flags) is flagged, flags
    if flagged:
        assert flags[0].startswith(f"w: in batches the submission's calls measured {batch_speedup:.4f}x or more"), flags


# ----- the rules' edges (mutation testing found these unpinned: scripts/mutation.sh report)


def test_spread_needs_four_samples_and_a_median_above_zero() -> None:
    """The spread tells a submission's own unsteady times from the host's noise (too_uncertain): from 4
    samples on, and 0 where the median is not above zero (no ratio to take)."""
    spread = report_module.spread
    assert spread([1.0, 2.0, 3.0]) == 0.0
    assert spread([1.0, 2.0, 3.0, 4.0]) == pytest.approx(1.0)  # quartiles 1.25 and 3.75 over 2.5
    assert spread([0.5, 0.5, 0.5, 1.0]) == pytest.approx(0.75)  # a median under 1 is a median
    assert spread([-1.0, 0.0, 0.0, 1.0]) == 0.0


@pytest.mark.parametrize(
    ("mine", "theirs", "own"),
    [
        (0.375, 0.1, True),  # above 25% and above 3x the baseline's: the submission's own doing
        (0.3, 0.05, True),
        (0.375, 0.125, False),  # exactly 3x the baseline's: the host's
        (0.25, 0.0, False),  # exactly 25%: the host's
        (0.2, 0.01, False),  # far above the baseline's, but under 25%: the host's
    ],
)
def test_an_unscorable_speedup_is_blamed_on_the_submission_only_past_both_limits(
    mine: float, theirs: float, own: bool
) -> None:
    """too_uncertain's words decide what a user does next (fix the kernel, or evaluate again): the
    submission's times are blamed only when their spread is above UNSTEADY_SPREAD and above
    UNSTEADY_FACTOR times the baseline's, measured alongside."""
    row = WorkloadRow(
        id="w", params={}, timed=True, verdict=Outcome.PASS, speedup_lo=1.0, speedup_hi=4.0,
        kernel_spread=mine, baseline_spread=theirs,
    )  # fmt: skip
    why = report_module.too_uncertain(row)
    assert why.startswith("w: the speedup's 95% interval [1.0000, 4.0000] is wider than x3 from end to end: ")
    assert ("the submission's own call times vary too much to score" in why) is own
    assert ("the host was too noisy to time it" in why) is (not own)


def test_a_workloads_warnings_reach_its_row_printable() -> None:
    """What the submission did that its verdict does not hold against it (it wrote into its inputs) is
    shown on the workload's row, made printable like every string the supervisor passes on."""
    result = all_pass()
    result.cases[4] = CaseResult("w2", Outcome.PASS, warnings=["wrote into its inputs\x1b[2J"])
    rows = build_report({}, two_timed(), result)["workloads"]
    assert rows[2]["warnings"] == [printable("wrote into its inputs\x1b[2J")] and rows[2]["verdict"] == "PASS"
    assert "\x1b" not in rows[2]["warnings"][0]


def test_a_remeasured_workload_says_so() -> None:
    """A workload the supervisor measured a second time (its first measurement was set aside) says so
    where it says why sampling stopped."""
    row = timing_row("w", const_timing(3.0, 1.5, remeasured=True), {}, [], [])
    assert row["stopped_by"] == "stable, measured twice"


def test_others_work_on_the_submissions_core_refuses_the_times_only_past_both_limits() -> None:
    """Others' work on the candidate's core makes its times not its own: refused above shared_core_share
    of its calls' time and from shared_core_ms of such work on (less is the clock's noise)."""
    limit = TimingMethod().shared_core_share
    for share, ms, refused in [(limit, 500.0, False), (0.5, 100.0, True), (0.5, 99.0, False)]:
        unmeasured: list[str] = []
        timing_row("w", const_timing(3.0, 1.5, shared_core_share=share, shared_core_ms=ms), {}, [], unmeasured)
        assert bool(unmeasured) is refused, (share, ms, unmeasured)


def test_others_work_on_the_submissions_core_raises_only_the_upper_bound() -> None:
    """Others' work on the candidate's core under the limits may have delayed its calls by all of its
    ms: the interval's upper bound goes up by that share of the candidate's calls (on the speedup's
    basis), the lower bound and the speedup stay (no gain from the host's interference)."""
    quiet = timing_row("w", const_timing(3.0, 3.0, null=1.0, n=12), {}, [], [])
    # 12 calls of 4 ms raw, 3 ms net: 4.8 ms of others' work is 10% of the raw time, 13.3% of the net
    busy = timing_row(
        "w", const_timing(3.0, 3.0, null=1.0, n=12, shared_core_ms=4.8, shared_core_share=0.05), {}, [], []
    )
    assert busy["basis"] == "net" and busy["speedup"] == quiet["speedup"] == pytest.approx(1.0)
    assert busy["speedup_lo"] == quiet["speedup_lo"]
    assert busy["speedup_hi"] == pytest.approx(quiet["speedup_hi"] / (1 - 4.8 / 48 * 4 / 3))
    raw = timing_row("w", const_timing(3.0, 3.0, null=20.0, n=12, shared_core_ms=23.0), {}, [], [])
    assert raw["basis"] == "raw" and raw["speedup_hi"] == pytest.approx(1 / (1 - 23.0 / (12 * 23.0)))
    every = timing_row("w", const_timing(3.0, 3.0, null=1.0, n=12, shared_core_ms=36.0), {}, [], [])
    assert every["speedup_hi"] == math.inf and every["speedup_lo"] == quiet["speedup_lo"]


def test_the_per_call_check_carries_the_noise_between_requests() -> None:
    """Single calls are timed in fresh processes each request as batches are, and draw between requests
    even more: on an H100, kernelbench/level1/9_Sigmoid's template against itself measured 1.0095x in
    batches and 0.7986x one call at a time, and was flagged. The flag now needs the gain past the limit
    by the floor of both figures (in quadrature: x1.159 for the assumed +-11%): the same figures are no
    flag; a batch 1.3 times as fast as its calls still is."""
    floor = calibration.assumed("w", 0.11)

    def row(batch_speedup: float, per_call_speedup: float, with_floor: bool) -> tuple[dict[str, Any], list[str]]:
        per_call = const_timing(3.0, 3.0 / per_call_speedup, null=0.5, n=12)
        t = const_timing(3.0, 3.0 / batch_speedup, null=0.05, n=12, batch=8, per_call=per_call)
        flags: list[str] = []
        return timing_row("w", t, {}, flags, [], floor if with_floor else None), flags

    _, flags = row(1.0095, 0.7986, with_floor=False)
    assert len(flags) == 1, flags  # the request alone: 1.0095 > 1.1 x 0.7986
    sigmoid, flags = row(1.0095, 0.7986, with_floor=True)
    assert flags == [], flags
    assert sigmoid["per_call_speedup"] == [pytest.approx(0.7986)] * 3  # the request's own figure, as measured
    _, flags = row(1.0, 1.0 / 1.27, with_floor=True)  # 1.27: within 1.1 x 1.159 = 1.275
    assert flags == [], flags
    _, flags = row(1.3, 1.0, with_floor=True)  # work done across calls
    assert len(flags) == 1 and flags[0].endswith("x1.159 more for the noise between requests)"), flags


def test_batch_mode_starts_at_batches_of_two_and_flags_a_gain_past_the_limit_only() -> None:
    """batch_figures: a batch of 1 is the per-call mode (no batch fields); from 2 calls a batch, the
    row says so. The flag (the evaluation fails) needs the batch speedup's *lower* bound above
    batch_gain_limit times the per-call interval's upper bound: a gain within it is no flag."""
    per_call = const_timing(2.0, 1.0, null=0.0, n=12)  # per call exactly 2x: [2, 2]
    assert batch_gain.batch_figures("w", const_timing(3.0, 1.5, batch=1, per_call=per_call), (2.0, 2.0), [], []) == {}
    flags: list[str] = []
    timing = const_timing(3.0, 1.5, batch=2, per_call=per_call)
    row = batch_gain.batch_figures("w", timing, (2.1, 2.5), flags, [])  # lower bound 2.1 < 1.1 x 2
    assert row == {"batch": 2, "graph": None, "per_call_speedup": [2.0, 2.0, 2.0]} and flags == []
    batch_gain.batch_figures("w", timing, (2.3, 2.5), flags, [])
    assert len(flags) == 1 and flags[0].startswith("w: in batches the submission's calls measured 2.3000x or more")


def test_an_uncalibrated_slot_assumes_the_methods_noise_between_requests() -> None:
    """A request alone cannot see what differs between requests (where each side runs, the processes'
    draw): on the H200, 6 of 37 pack problems evaluated against themselves had their own intervals wholly
    above 1.0. Where the slot has no calibration, the server's evaluation folds the method's
    uncalibrated_floor into the interval; an A/A request (assume_floor off) keeps its own."""
    res = all_pass(const_timing(1.06, 1.0), const_timing(2.0, 2.0))
    own = build_report({}, two_timed(), res)
    small = next(w for w in own["workloads"] if w["id"] == "small")
    assert small["speedup_lo"] > 1.0 and small.get("assumed_floor") is None  # the point interval: a "gain"
    doc = report_module.build_report({}, two_timed(), res, assume_floor=True).document()
    small = next(w for w in doc["workloads"] if w["id"] == "small")
    assert small.get("calibration") is None and small["assumed_floor"] == pytest.approx(0.11)
    assert small["speedup_lo"] < 1.0 < small["speedup_hi"]  # 1.06 within +-11%
    assert small["speedup_within"] == [pytest.approx(1.06)] * 2
    lines = report_lines(doc)
    assert lines_module.UNCALIBRATED_ASSUMED.format(0.11) in lines
    assert len(lines_module.UNCALIBRATED_ASSUMED.format(0.11)) < 190  # one line in kcoral show's 200 columns
    assert any("this request alone: [1.0600, 1.0600] (+-11% assumed between requests)" in line for line in lines)
    # an operator's method without it: the request's interval alone, as before
    off = replace(two_timed(), timing=replace(TIMING, uncalibrated_floor=0.0))
    doc = report_module.build_report({}, off, res, assume_floor=True).document()
    assert next(w for w in doc["workloads"] if w["id"] == "small")["speedup_lo"] > 1.0
    assert lines_module.UNCALIBRATED in report_lines(doc)


def test_a_position_nothing_took_off_is_said_beside_the_calibration_line() -> None:
    """The server's evaluation names the cost of where the candidate's calls run when nothing took it off
    (a lease of 2 cores whose slot has no calibration: tasks.evaluate); the lines say it after the
    calibration's line, before the summary, and never where it is not given."""
    res = all_pass(const_timing(1.06, 1.0), const_timing(2.0, 2.0))
    doc = report_module.build_report({}, two_timed(), res, assume_floor=True).document()
    lines = report_lines({**doc, "position": "the reason"})
    at = lines.index(lines_module.UNCALIBRATED_ASSUMED.format(0.11))
    assert lines[at + 1] == "uncorrected position: the reason" and lines[at + 2].startswith("baseline: ")
    assert lines[-1] == "passed: 3/3"
    assert not any(line.startswith("uncorrected position") for line in report_lines(doc))
    assert len(f"uncorrected position: {POSITION_UNCORRECTED}") < 190  # one line in kcoral show's 200 columns


def test_a_calibrated_workload_keeps_its_floor_and_the_report_says_so_in_its_own_words() -> None:
    """The server's evaluation assumes the method's floor only for a timed workload that has none
    (never over a calibration's, never with the method's floor at 0), and the lines say which in full."""
    res = all_pass(const_timing(1.06, 1.0), const_timing(2.0, 2.0))
    measured = calibration.NoiseFloor("small", 5, 0.0, 0.01, 0.03, 1.0, 1.0, 2.0, ("a", "b", "c", "d", "e"))
    doc = report_module.build_report({}, two_timed(), res, floors={"small": measured}, assume_floor=True).document()
    small, large = (next(w for w in doc["workloads"] if w["id"] == k) for k in ("small", "large"))
    assert small["calibration"]["requests"] == 5 and small.get("assumed_floor") is None
    assert large.get("calibration") is None and large["assumed_floor"] == pytest.approx(0.11)
    lines = report_lines(doc)
    assert any(
        line.startswith(
            "    calibrated: 5 A/A requests over 0.0 min (one window of the host's time: a noisier spell can lie "
            "outside it) on this slot put the candidate's position"
        )
        for line in lines
    )
    assert "uncalibrated: this slot has no A/A calibration for the task: its interval holds an assumed +-11% of " in (
        "\n".join(lines)
    )
    own = report_lines(report_module.build_report({}, two_timed(), res).document())
    assert "uncalibrated: this slot has no A/A calibration for the task, so the interval is this request's alone" in (
        "\n".join(own)
    )
    off = replace(two_timed(), timing=replace(TIMING, uncalibrated_floor=0.0))
    doc = report_module.build_report({}, off, res, assume_floor=True).document()
    assert all(w.get("assumed_floor") is None for w in doc["workloads"])


def test_the_lines_name_a_busy_hosts_longer_measurement_a_holdouts_error_and_the_batch_flags_limit() -> None:
    doc = build_report(
        {}, two_timed(), all_pass(replace(const_timing(2.0, 1.0), stopped_by="noisy: the halves disagreed"))
    )
    assert any(
        line.startswith("workload small") and line.endswith("PASS (a busy host: measured longer)")
        for line in (report_lines(doc))
    ), report_lines(doc)
    res = all_pass()
    res.cases[0] = CaseResult("h0", Outcome.ERROR, "boom")
    lines = report_lines(build_report({}, two_timed(), res))
    assert (
        "holdout correctness: FAIL (an error or a crash on a secret probe: its shapes and values are not given; "
        in ("\n".join(lines))
    )
    flags: list[str] = []
    per_call = const_timing(2.0, 1.0, null=0.0, n=12)
    batch_gain.batch_figures("w", const_timing(3.0, 1.5, batch=2, per_call=per_call), (2.3, 2.5), flags, [])
    assert flags[0].endswith("(the batch mode times the sum; limit 1.1x of the per-call figure)"), flags


def test_the_batch_flag_needs_more_than_the_limit_and_leaves_the_per_calls_disturbed_iterations_out() -> None:
    """A batch lower bound exactly at the limit times the per-call bound is no flag (strictly above it
    is); and the per-call figure is estimated over its undisturbed iterations only, as the batches are:
    the judge's disturbed single calls do not set the bound a batch is held against."""
    per_call = const_timing(2.0, 1.0, null=0.0, n=12)  # per call exactly 2x
    timing = const_timing(3.0, 1.5, batch=2, per_call=per_call)
    bound = TimingMethod().batch_gain_limit * 2.0
    flags: list[str] = []
    batch_gain.batch_figures("w", timing, (bound, bound * 1.1), flags, [])
    assert flags == []
    batch_gain.batch_figures("w", timing, (math.nextafter(bound, math.inf), bound * 1.1), flags, [])
    assert len(flags) == 1
    # 12 clean iterations at 2x and 12 disturbed ones at 0.5x (a stalled judge): the figure is the clean 2x
    mixed = replace(
        per_call,
        baseline_ms=[2.0] * 24,
        kernel_ms=[1.0] * 12 + [4.0] * 12,
        null_ms=[0.0] * 24,
        disturbed=[False] * 12 + [True] * 12,
    )
    row = batch_gain.batch_figures("w", replace(timing, per_call=mixed), (2.1, 2.5), [], [])
    assert row["per_call_speedup"] == [2.0, 2.0, 2.0]


def test_a_batch_whose_single_calls_give_no_interval_is_inconclusive_not_unchecked() -> None:
    """The batch-gain check needs the per-call figure: where every single call was left out as disturbed
    on the judge's side, a batch 2.5x faster than single calls must not pass unchecked (before: no
    figure, no flag, a score); the evaluation is inconclusive with the reason, and nothing is flagged."""
    per_call = replace(const_timing(2.0, 1.0, null=0.0, n=40), disturbed=[True] * 40)
    timing = const_timing(3.0, 1.5, batch=8, per_call=per_call)
    flags: list[str] = []
    unmeasured: list[str] = []
    row = batch_gain.batch_figures("w", timing, (5.0, 5.5), flags, unmeasured)
    assert row["per_call_speedup"] is None and flags == []
    assert len(unmeasured) == 1 and unmeasured[0].startswith(
        "w: the single calls the batch is held against gave no interval (40 of 40 disturbed"
    ), unmeasured
    doc = report_module.build_report({}, two_timed(), all_pass(timing, const_timing(2.0, 2.0))).document()
    assert doc.get("summary") is None
    assert any(line.startswith("small: the single calls") for line in doc["inconclusive"]), doc["inconclusive"]


def test_a_reports_floor_says_how_much_of_the_hosts_time_its_requests_span() -> None:
    """On the dev VM a floor of 10 requests over 4 minutes (spread 1.4%) let a false gain through in the
    noisier spell right after it (bench/results/issue29-dev-vm-2026-12-07-stop64): every report resting on
    a floor says over how long its requests ran, and where that is one window of the host's time, so;
    times a server sent that say nothing (none, reversed, text) show no span."""
    floor = calibration.NoiseFloor("w", 10, 0.336, 0.014, 0.049, 1.0, 100.0, 341.0).document()
    row = WorkloadRow(
        id="w", params={}, timed=True, verdict=Outcome.PASS, speedup=1.0, speedup_within=[0.99, 1.01], calibration=floor
    )
    line = lines_module.calibration_line(row)
    assert line.startswith(
        "calibrated: 10 A/A requests over 4.0 min (one window of the host's time: a noisier spell can lie outside it) "
        "on this slot put the candidate's position at +0.3360 ms per call"
    )
    spaced = replace(row, calibration=floor | {"last": 100.0 + calibration.ONE_WINDOW_S + 3600})
    assert lines_module.calibration_line(spaced).startswith("calibrated: 10 A/A requests over 70.0 min on this slot")
    for first, last in [(None, None), (200.0, 100.0), ("0", "9"), (0.0, float("inf")), (True, 5.0)]:
        odd = replace(row, calibration=floor | {"first": first, "last": last})
        assert lines_module.calibration_line(odd).startswith("calibrated: 10 A/A requests on this slot"), (first, last)
