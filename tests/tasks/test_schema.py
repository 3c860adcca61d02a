"""Exact behaviour of the cross-process documents (tasks.harness.schema): every limit on both sides, every
default, every refusal's message; pure, no Docker."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from kcoral.tasks.harness import schema
from kcoral.tasks.harness.schema import (
    MAX_RESULT_BYTES,
    MAX_SAMPLES,
    MAX_TEXT,
    Case,
    CaseFile,
    CaseResult,
    Outcome,
    Phase,
    SchemaError,
    SupervisorResult,
    Timing,
    parse_cases,
    parse_result,
)
from tests.tasks.documents import TIMING, TIMING_DOC


def test_the_published_limits() -> None:
    assert schema.SCHEMA_VERSION == 1
    assert MAX_RESULT_BYTES == 16 * 1024 * 1024 and MAX_TEXT == 12000 and MAX_SAMPLES == 10000


def test_enum_values_are_the_wire_values() -> None:
    assert [p.value for p in Phase] == ["holdout", "workload"]
    assert [o.value for o in Outcome] == ["PASS", "FAIL", "FLAKY", "ERROR"]


def test_defaults() -> None:
    r = CaseResult("c", Outcome.PASS)
    assert (r.reason, r.stats, r.timing) == ("", {}, None)
    s = SupervisorResult([])
    assert (s.interference, s.cpu_watch, s.version) == ([], "", 1)
    t = Timing([1.0], [1.0], [1.0], "stable", 0)
    assert (t.idle_cpu_ms, t.idle_cpu_share, t.early_cpu_ms, t.early_cpu_share) == (0.0, 0.0, 0.0, 0.0)


# ----- case files


def case_doc(**over: Any) -> dict[str, Any]:
    c = {
        "id": "c00",
        "phase": "holdout",
        "workload": "w",
        "params": {"n": 1},
        "seed": 7,
        "timed": True,
        "tolerance": {"atol": 1e-3, "rtol": 0},
    }
    c.update(over)
    return c


def case_file(*cases: dict[str, Any], **over: Any) -> bytes:
    doc = {"task": "t", "device": "cpu", "sample_key": "k", "cases": list(cases), "timing": TIMING_DOC}
    doc.update(over)
    return json.dumps(doc).encode()


def test_parse_cases_reads_every_field() -> None:
    doc = parse_cases(case_file(case_doc(), case_doc(id="c01", phase="workload", timed=False)))
    assert doc == CaseFile(
        "t",
        "cpu",
        [
            Case("c00", Phase.HOLDOUT, "w", {"n": 1}, 7, True, {"atol": 1e-3, "rtol": 0.0}),
            Case("c01", Phase.WORKLOAD, "w", {"n": 1}, 7, False, {"atol": 1e-3, "rtol": 0.0}),
        ],
        "k",
        TIMING,
    )
    assert isinstance(doc.cases[0].tolerance["rtol"], float)


@pytest.mark.parametrize("timed", [1, "true", None, [True]])
def test_only_true_means_timed(timed: Any) -> None:
    assert parse_cases(case_file(case_doc(timed=timed))).cases[0].timed is False


def test_case_file_to_json_is_plain_json() -> None:
    doc = CaseFile("t", "cpu", [Case("c", Phase.HOLDOUT, "w", {}, 1, False, {})], "k", TIMING)
    assert json.loads(doc.to_json()) == {
        "task": "t",
        "device": "cpu",
        "sample_key": "k",
        "timing": TIMING_DOC,
        "cases": [
            {"id": "c", "phase": "holdout", "workload": "w", "params": {}, "seed": 1, "timed": False, "tolerance": {}}
        ],
        "deadline": 0.0,
    }


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\xff", "the case file is not JSON (UnicodeDecodeError)"),
        (b"{", "the case file is not JSON (JSONDecodeError)"),
        (b"[" * 100000, "the case file is not JSON (RecursionError)"),
        (b"[]", "case file: expected an object, got list"),
        (case_file(case_doc(phase="x")), "case phase 'x'"),
        (case_file(case_doc(phase=None)), "case phase None"),
        (case_file(case_doc(seed="1")), "case seed '1'"),
        (case_file(case_doc(seed=True)), "case seed True"),
        (case_file(case_doc(seed=1.0)), "case seed 1.0"),
        (case_file(case_doc(id=1)), "case id: expected text, got int"),
        (case_file(case_doc(workload=None)), "workload: expected text, got NoneType"),
        (case_file(case_doc(params=[])), "params: expected an object, got list"),
        (case_file(case_doc(tolerance=None)), "tolerance: expected an object, got NoneType"),
        (case_file(case_doc(tolerance={"atol": "1"})), "tolerance: expected a finite number, got '1'"),
        (case_file(case_doc(), task=1), "task: expected text, got int"),
        (case_file(case_doc(), device=None), "device: expected text, got NoneType"),
        (case_file(case_doc(), sample_key=[]), "sample_key: expected text, got list"),
        (case_file("x"), "case: expected an object, got str"),
        (case_file(cases=None), "cases: expected a list of at most 1000 items"),
    ],
)
def test_case_file_refusals(data: bytes, message: str) -> None:
    with pytest.raises(SchemaError) as exc:
        parse_cases(data)
    assert str(exc.value) == message


def test_case_file_limit_of_1000_cases() -> None:
    assert len(parse_cases(case_file(*[case_doc()] * 1000)).cases) == 1000
    with pytest.raises(SchemaError, match="at most 1000 items"):
        parse_cases(case_file(*[case_doc()] * 1001))


# ----- results


def timing_doc(**over: Any) -> dict[str, Any]:
    t = {
        "baseline_ms": [2.0, 2.5],
        "kernel_ms": [1.0],
        "null_ms": [0.5],
        "stopped_by": "stable",
        "warmup_calls": 3,
        "idle_cpu_ms": 0.25,
        "idle_cpu_share": 0.5,
        "early_cpu_ms": 1.5,
        "early_cpu_share": 2.0,
    }
    t.update(over)
    return t


def result_doc(*cases: dict[str, Any], **over: Any) -> bytes:
    doc: dict[str, Any] = {"version": 1, "cases": list(cases)}
    doc.update(over)
    return json.dumps(doc).encode()


def test_parse_result_reads_every_field() -> None:
    got = parse_result(
        result_doc(
            {
                "id": "c",
                "outcome": "FLAKY",
                "reason": "r",
                "stats": {"y": {"rms_ratio": 0.5, "failed_elements": 2}},
                "timing": timing_doc(),
            },
            interference=["i"],
            cpu_watch="cgroup v2",
        )
    )
    assert got == SupervisorResult(
        [
            CaseResult(
                "c",
                Outcome.FLAKY,
                "r",
                {"y": {"rms_ratio": 0.5, "failed_elements": 2}},
                Timing([2.0, 2.5], [1.0], [0.5], "stable", 3, 0.25, 0.5, 1.5, 2.0),
            )
        ],
        ["i"],
        "cgroup v2",
    )
    assert isinstance(got.cases[0].stats["y"]["failed_elements"], float)


def test_parse_result_defaults() -> None:
    got = parse_result(
        result_doc(
            {"id": "c", "outcome": "PASS", "timing": None},
            {"id": "d", "outcome": "ERROR", "timing": {"baseline_ms": [1], "kernel_ms": [1], "null_ms": [1]}},
        )
    )
    assert got.interference == [] and got.cpu_watch == ""
    assert got.cases[0] == CaseResult("c", Outcome.PASS, "", {}, None)
    t = got.cases[1].timing
    assert t == Timing([1.0], [1.0], [1.0], "", 0, 0.0, 0.0, 0.0, 0.0)
    assert isinstance(t.warmup_calls, int) and isinstance(t.baseline_ms[0], float)


def test_warmup_calls_is_an_integer() -> None:
    got = parse_result(result_doc({"id": "c", "outcome": "PASS", "timing": timing_doc(warmup_calls=2.9)}))
    assert got.cases[0].timing.warmup_calls == 2


def test_round_trip_through_to_json() -> None:
    doc = SupervisorResult(
        [CaseResult("c", Outcome.PASS, "", {}, Timing([1.5], [0.5], [0.25], "max", 1))], ["x"], "none"
    )
    assert parse_result(doc.to_json().encode()) == doc
    assert json.loads(doc.to_json())["version"] == 1


def test_a_batch_timing_and_its_per_call_check_round_trip_one_level_deep() -> None:
    check = Timing([3.1, 3.2], [3.0, 3.3], [0.2, 0.2], "per-call check", 0)
    timing = Timing([2.9], [2.8], [0.05], "stable", 24, batch=8, per_call=check)
    doc = SupervisorResult([CaseResult("c", Outcome.PASS, "", {}, timing)])
    assert parse_result(doc.to_json().encode()) == doc
    # a per-call check holds no check of its own: one nested deeper is not read
    deeper = json.loads(doc.to_json())
    deeper["cases"][0]["timing"]["per_call"]["per_call"] = deeper["cases"][0]["timing"]["per_call"].copy()
    parsed = parse_result(json.dumps(deeper).encode()).cases[0].timing
    assert parsed is not None and parsed.per_call == check and parsed.per_call.per_call is None


def test_to_json_refuses_nan() -> None:
    doc = SupervisorResult([CaseResult("c", Outcome.PASS, "", {"y": {"rms_ratio": math.nan}})])
    with pytest.raises(ValueError):
        doc.to_json()


def test_result_size_limit_both_sides() -> None:
    body = result_doc()
    assert parse_result(body + b" " * (MAX_RESULT_BYTES - len(body))).cases == []
    too_big = body + b" " * (MAX_RESULT_BYTES - len(body) + 1)
    with pytest.raises(SchemaError) as exc:
        parse_result(too_big)
    assert str(exc.value) == f"a result of {MAX_RESULT_BYTES + 1} bytes is over {MAX_RESULT_BYTES}"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\xff", "the result is not JSON (UnicodeDecodeError)"),
        (b"nope", "the result is not JSON (JSONDecodeError)"),
        (b"[" * 100000, "the result is not JSON (RecursionError)"),
        (b"[1]", "result: expected an object, got list"),
        (result_doc(version=2), "result version 2, expected 1"),
        (result_doc(version=True), "result version True, expected 1"),
        (result_doc(version=1.0), "result version 1.0, expected 1"),
        (b'{"cases": []}', "result version None, expected 1"),
        (result_doc(cases=None), "cases: expected a list of at most 1000 items"),
        (result_doc(interference="x"), "interference: expected a list of at most 100 items"),
        (result_doc(interference=[1]), "interference: expected text, got int"),
        (result_doc(cpu_watch=None), "cpu_watch: expected text, got NoneType"),
        (result_doc(1), "case: expected an object, got int"),
        (result_doc({"id": "c", "outcome": "pass"}), "case outcome 'pass'"),
        (result_doc({"id": "c"}), "case outcome None"),
        (result_doc({"id": 3, "outcome": "PASS"}), "case id: expected text, got int"),
        (result_doc({"id": "c", "outcome": "PASS", "reason": None}), "reason: expected text, got NoneType"),
        (result_doc({"id": "c", "outcome": "PASS", "stats": []}), "stats: expected an object, got list"),
        (result_doc({"id": "c", "outcome": "PASS", "stats": {"y": 1}}), "stats: expected an object, got int"),
        (
            result_doc({"id": "c", "outcome": "PASS", "stats": {"y": {"a": None}}}),
            "stats: expected a finite number, got None",
        ),
        (result_doc({"id": "c", "outcome": "PASS", "timing": []}), "timing: expected an object, got list"),
        (
            result_doc({"id": "c", "outcome": "PASS", "timing": timing_doc(null_ms=None)}),
            "null_ms: expected a list of at most 10000 items",
        ),
        (
            result_doc({"id": "c", "outcome": "PASS", "timing": timing_doc(baseline_ms=[0])}),
            "baseline_ms: expected a positive number, got 0",
        ),
        (
            result_doc({"id": "c", "outcome": "PASS", "timing": timing_doc(kernel_ms=[-1.5])}),
            "kernel_ms: expected a positive number, got -1.5",
        ),
        (
            result_doc({"id": "c", "outcome": "PASS", "timing": timing_doc(stopped_by=1)}),
            "stopped_by: expected text, got int",
        ),
        (
            result_doc({"id": "c", "outcome": "PASS", "timing": timing_doc(warmup_calls="3")}),
            "warmup_calls: expected a finite number, got '3'",
        ),
        (
            result_doc({"id": "c", "outcome": "PASS", "timing": timing_doc(early_cpu_share=False)}),
            "early_cpu_share: expected a finite number, got False",
        ),
    ],
)
def test_result_refusals(data: bytes, message: str) -> None:
    with pytest.raises(SchemaError) as exc:
        parse_result(data)
    assert str(exc.value) == message


def test_non_finite_numbers_are_refused() -> None:
    for bad in (math.inf, -math.inf, math.nan):
        with pytest.raises(SchemaError, match="expected a finite number"):
            schema._num(bad, "x")
    assert schema._num(-2, "x") == -2.0
    assert schema._num(0, "x") == 0.0


def test_positive_means_above_zero() -> None:
    assert schema._num(1e-300, "x", positive=True) == 1e-300
    with pytest.raises(SchemaError, match="expected a positive number"):
        schema._num(0.0, "x", positive=True)


def test_refusal_message_of_a_huge_value_is_cut() -> None:
    with pytest.raises(SchemaError) as exc:
        schema._num("y" * 1000, "x")
    assert len(str(exc.value)) == 200 and str(exc.value).startswith("x: expected a finite number, got 'yyy")


def test_list_limits_both_sides() -> None:
    assert len(schema._list([0] * 5, "l", 5)) == 5
    with pytest.raises(SchemaError, match="l: expected a list of at most 5 items"):
        schema._list([0] * 6, "l", 5)
    assert len(parse_result(result_doc(interference=["x"] * 100)).interference) == 100
    with pytest.raises(SchemaError):
        parse_result(result_doc(interference=["x"] * 101))
    assert len(parse_result(result_doc(*[{"id": "c", "outcome": "PASS"}] * 1000)).cases) == 1000
    with pytest.raises(SchemaError):
        parse_result(result_doc(*[{"id": "c", "outcome": "PASS"}] * 1001))


def test_sample_limit_both_sides() -> None:
    ok = parse_result(result_doc({"id": "c", "outcome": "PASS", "timing": timing_doc(kernel_ms=[1.0] * MAX_SAMPLES)}))
    assert len(ok.cases[0].timing.kernel_ms) == MAX_SAMPLES
    with pytest.raises(SchemaError, match="kernel_ms"):
        parse_result(
            result_doc({"id": "c", "outcome": "PASS", "timing": timing_doc(kernel_ms=[1.0] * (MAX_SAMPLES + 1))})
        )


def test_text_is_cut_to_the_limit() -> None:
    got = parse_result(result_doc({"id": "c", "outcome": "FAIL", "reason": "r" * (MAX_TEXT + 5)}))
    assert got.cases[0].reason == "r" * MAX_TEXT
    assert schema._text("r" * MAX_TEXT, "t") == "r" * MAX_TEXT
