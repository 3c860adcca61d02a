"""The supervisor's result document (tasks.harness.schema) and the report built from it (tasks.report): pure,
no Docker. A malformed document is refused whole; every verdict-deciding rule is checked here."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from typing import Any

import pytest

from kcoral.protocol.typeddata import DataError
from kcoral.tasks import report as report_module
from kcoral.tasks import report_lines as lines_module
from kcoral.tasks.documents import EvalReport, parse
from kcoral.tasks.harness.schema import (
    Case,
    CaseFile,
    CaseResult,
    Outcome,
    Phase,
    SupervisorResult,
    Timing,
    parse_cases,
    parse_result,
)
from kcoral.tasks.harness.stats import net_samples
from tests.tasks.documents import TIMING


# The report is a typed document (tasks.documents.EvalReport); these tests check the JSON object it
# is written as, and run passed/report_lines on the typed report parsed back from it.
def build_report(*args: Any) -> dict[str, Any]:
    return report_module.build_report(*args).document()


def passed(doc: dict[str, Any]) -> bool:
    return parse(EvalReport, doc).ok


def report_lines(doc: dict[str, Any]) -> list[str]:
    return lines_module.report_lines(parse(EvalReport, doc))


MANIFEST = {"floor_ms": 0.4, "max_speedup": 8}


TOL = {"atol": 1e-3, "rtol": 1e-3, "rms": 1e-4}


def cases() -> CaseFile:
    return CaseFile(
        "demo/softmax",
        "cpu",
        [
            Case("c00", Phase.HOLDOUT, "holdout0", {}, 11, False, TOL),
            Case("c01", Phase.WORKLOAD, "standard", {"rows": 8}, 12, True, TOL),
            Case("c02", Phase.WORKLOAD, "wide", {"rows": 2}, 13, False, TOL),
        ],
        sample_key="ab" * 32,
        timing=TIMING,
    )


def timing(base: float = 3.0, kern: float = 1.5, null: float = 1.0, n: int = 20) -> Timing:
    return Timing(
        baseline_ms=[base + null + 0.01 * (i % 3) for i in range(n)],
        kernel_ms=[kern + null + 0.01 * (i % 2) for i in range(n)],
        null_ms=[null] * n,
        stopped_by="stable",
        warmup_calls=3,
    )


def result(**over: Any) -> SupervisorResult:
    base = [
        CaseResult("c00", Outcome.PASS),
        CaseResult("c01", Outcome.PASS, "", {}, timing()),
        CaseResult("c02", Outcome.PASS),
    ]
    return SupervisorResult(over.pop("cases", base), **over)


def test_round_trip() -> None:
    doc = result(interference=["x"], cpu_watch="cgroup v2")
    back = parse_result(doc.to_json().encode())
    assert back == doc


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.update(version=2),
        lambda d: d["cases"][0].update(outcome="PASSED"),
        lambda d: d["cases"][0].update(reason=7),
        lambda d: d["cases"][1]["timing"].update(kernel_ms=["1.0"]),
        lambda d: d["cases"][1]["timing"].update(kernel_ms=[-1.0]),
        lambda d: d["cases"][1]["timing"].update(kernel_ms=[True]),
        lambda d: d["cases"][1]["timing"].update(kernel_ms={"a": 1}),
        lambda d: d["cases"][0].update(stats={"y": {"rms_ratio": "x"}}),
        lambda d: d.update(cases="all"),
        lambda d: d.update(interference=[1]),
    ],
)
def test_malformed_documents_are_refused(mutate: Any) -> None:
    doc = json.loads(result().to_json())
    mutate(doc)
    with pytest.raises(DataError):
        parse_result(json.dumps(doc).encode())


@pytest.mark.parametrize("data", [b"[" * 100000, b"\xff", b"[]", b"not json", b'{"version": 1, "cases": [1]}', b"NaN"])
def test_garbage_is_refused(data: bytes) -> None:
    with pytest.raises(DataError):
        parse_result(data)


def test_net_samples_subtract_the_same_iteration() -> None:
    assert net_samples([3.0, 5.0], [1.0, 2.0]) == [2.0, 3.0]


def test_speedup_is_net_of_the_protocol_cost() -> None:
    report = build_report(MANIFEST, cases(), result())
    row = next(w for w in report["workloads"] if w["id"] == "standard")
    assert row["protocol_ms"] == 1.0
    assert row["baseline_ms"] == pytest.approx(3.01, abs=0.011) and row["kernel_ms"] == pytest.approx(1.5, abs=0.011)
    assert row["speedup"] == pytest.approx(3.01 / 1.505, rel=0.01)
    assert row["speedup_lo"] <= row["speedup"] <= row["speedup_hi"]
    assert passed(report) and report["passed"] == 2 and report["total"] == 2


def test_the_supervisors_disturbed_iterations_are_left_out_of_the_report() -> None:
    """Iteration 4's baseline call took 13 ms more while the judge's side waited: the supervisor marked it, and
    the report, read from the document, leaves it and its block's partner out (a candidate cannot mark one)."""
    t = timing()
    t.baseline_ms[4] += 13.0
    t.judge_wait_ms = [2.5 if i == 4 else 0.01 for i in range(20)]
    t.disturbed = [i == 4 for i in range(20)]
    res = result(cases=[CaseResult("c00", Outcome.PASS), CaseResult("c01", Outcome.PASS, "", {}, t)])
    back = parse_result(res.to_json().encode())
    report = build_report(MANIFEST, cases(), back)
    row = next(w for w in report["workloads"] if w["id"] == "standard")
    clean = next(w for w in build_report(MANIFEST, cases(), result())["workloads"] if w["id"] == "standard")
    assert row["disturbed"] == 1 and clean["disturbed"] == 0 and row["basis"] == "net"
    assert row["speedup"] == pytest.approx(clean["speedup"], rel=0.005) and row["speedup_hi"] < 2.1
    assert "n=20 (stable; 1 disturbed left out; " in "\n".join(report_lines(report))


def test_floor_and_max_speedup_flag() -> None:
    fast = result(
        cases=[
            CaseResult("c00", Outcome.PASS),
            CaseResult("c01", Outcome.PASS, "", {}, timing(kern=0.3, null=0.1)),  # the protocol does not dominate
            CaseResult("c02", Outcome.PASS),
        ]
    )
    report = build_report({"floor_ms": 0.4, "max_speedup": 5}, cases(), fast)
    assert any("below the physical floor 0.4 ms" in f for f in report["flags"])
    assert any("above this task's limit of 5x" in f for f in report["flags"])
    assert not passed(report)


def test_interference_fails_the_evaluation() -> None:
    report = build_report(MANIFEST, cases(), result(interference=["standard: the candidate's processes used CPU"]))
    assert report["flags"] == ["standard: the candidate's processes used CPU"] and not passed(report)
    assert "flagged: standard: the candidate's processes used CPU" in report_lines(report)


def test_unmeasurable_call_is_inconclusive_not_crashed() -> None:
    """A call no longer than the protocol's cost: no speedup, no score (and no crash on a zero or negative
    median): inconclusive, not the submission's failure."""
    t = timing(kern=0.0)
    t.kernel_ms = [1.0 + (0.01 if i % 2 else -0.01) for i in range(20)]
    report = build_report(
        MANIFEST,
        cases(),
        result(
            cases=[
                CaseResult("c00", Outcome.PASS),
                CaseResult("c01", Outcome.PASS, "", {}, t),
                CaseResult("c02", Outcome.PASS),
            ]
        ),
    )
    assert any("fixed cost" in f for f in report["inconclusive"]) and not report["flags"] and not passed(report)
    assert "summary" not in report


def test_holdout_failure_hides_details_and_leaves_no_score() -> None:
    bad = result(cases=[CaseResult("c00", Outcome.ERROR, "ValueError: secret value 0.123")])
    report = build_report(MANIFEST, cases(), bad)
    assert report["holdout"] == "FAIL" and report["holdout_failure"] == "ERROR"
    assert [w["verdict"] for w in report["workloads"]] == ["ERROR", "ERROR"]  # not run: not in the result
    assert report["passed"] == 0 and report["total"] == 2 and "summary" not in report
    assert "0.123" not in json.dumps(report) and "0.123" not in "\n".join(report_lines(report))


def test_missing_and_failed_workloads() -> None:
    res = result(cases=[CaseResult("c00", Outcome.PASS), CaseResult("c01", Outcome.FLAKY, "timed sample 3: y: bad")])
    report = build_report(MANIFEST, cases(), res)
    rows = {w["id"]: w for w in report["workloads"]}
    assert rows["standard"]["verdict"] == "FLAKY" and "speedup" not in rows["standard"]
    assert rows["wide"]["verdict"] == "ERROR" and rows["wide"]["reason"] == "the case was not run"
    assert not passed(report) and report["passed"] == 0


def test_geomean_interval_stays_finite() -> None:
    report = build_report(MANIFEST, cases(), result())
    s = report["summary"]
    assert all(math.isfinite(s[k]) for k in ("speedup", "speedup_lo", "speedup_hi"))


def test_reasons_are_printed_without_control_sequences() -> None:
    res = result(
        cases=[
            CaseResult("c00", Outcome.PASS),
            CaseResult("c01", Outcome.ERROR, "boom\x1b[8m hidden\x1b]52;c;ZWNobw==\x07\nTraceback ..."),
            CaseResult("c02", Outcome.PASS),
        ]
    )
    lines = report_lines(build_report(MANIFEST, cases(), res))
    failure = next(line for line in lines if "first failure" in line)
    assert failure == "    first failure: boom\\x1b[8m hidden\\x1b]52;c;ZWNobw==\\x07"
    assert not any("\x1b" in line or "\x07" in line for line in lines)


def test_case_file_round_trip_and_refusals() -> None:
    doc = cases()
    assert parse_cases(doc.to_json().encode()) == doc
    for bad in (
        '{"task": "t", "device": "cpu", "sample_key": "k", "cases": [{"id": "c", "phase": "x"}]}',
        '{"task": "t", "device": "cpu", "sample_key": "k", "cases": [{"id": "c", "phase": "holdout", '
        '"workload": "w", "params": {}, "seed": "1", "timed": false, "tolerance": {}}]}',
        "[]",
        '{"task": 1}',
    ):
        with pytest.raises(DataError):
            parse_cases(bad.encode())


def test_phase_times_are_numbers_and_capped_in_count() -> None:
    doc = json.loads(result().to_json())
    parsed = parse_result(json.dumps({**doc, "phases": {f"check w{i}": i / 10 for i in range(300)}}).encode())
    assert len(parsed.phases) == 200 and parsed.phases["check w3"] == 0.3
    with pytest.raises(DataError):
        parse_result(json.dumps({**doc, "phases": {"start": "soon"}}).encode())
    with pytest.raises(DataError):
        parse_result(json.dumps({**doc, "phases": [1]}).encode())
    phases = {"start": 3.14159, "holdout": 1.0, "check a": 0.25, "timing a": 6.5, "check b": 0.25}
    report = build_report(MANIFEST, cases(), replace(result(), phases=phases))
    assert report["phases"] == {"start": 3.142, "holdout": 1.0, "check a": 0.25, "timing a": 6.5, "check b": 0.25}
    assert report_lines(report)[-2] == "time: start 3.1 s, holdout 1.0 s, checks 0.5 s, timing a 6.5 s"
