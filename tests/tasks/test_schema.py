"""Exact behaviour of the cross-process documents (tasks.harness.schema): every limit on both sides, every
default, every refusal's message; pure, no Docker."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from kcoral.protocol.typeddata import DataError
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
    Sampled,
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
def test_timed_is_true_or_false_and_nothing_else(timed: Any) -> None:
    with pytest.raises(DataError, match="^cases.0.timed: must be true or false$"):
        parse_cases(case_file(case_doc(timed=timed)))
    assert parse_cases(case_file(case_doc(timed=False))).cases[0].timed is False


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
        (b"\xff", "not JSON: 'utf-8' codec can't decode byte 0xff in position 0: invalid start byte"),
        (b"{", "not JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
        (b"[" * 100000, "not JSON: maximum recursion depth exceeded while decoding a JSON array from a unicode string"),
        (b"[]", "must be an object"),
        (case_file(case_doc(phase="x")), "cases.0.phase: must be one of: holdout, workload"),
        (case_file(case_doc(phase=None)), "cases.0.phase: must be one of: holdout, workload"),
        (case_file(case_doc(seed="1")), "cases.0.seed: must be a whole number"),
        (case_file(case_doc(seed=True)), "cases.0.seed: must be a whole number"),
        (case_file(case_doc(seed=1.0)), "cases.0.seed: must be a whole number"),
        (case_file(case_doc(id=1)), "cases.0.id: must be text"),
        (case_file(case_doc(workload=None)), "cases.0.workload: must be text"),
        (case_file(case_doc(params=[])), "cases.0.params: must be an object"),
        (case_file(case_doc(tolerance=None)), "cases.0.tolerance: must be an object"),
        (case_file(case_doc(tolerance={"atol": "1"})), "cases.0.tolerance.atol: must be a finite number"),
        (case_file(case_doc(timed=1)), "cases.0.timed: must be true or false"),
        (case_file(case_doc(timed=None)), "cases.0.timed: must be true or false"),
        (case_file(case_doc(extra=1)), "cases.0.extra: no such field (a typo is refused)"),
        (case_file(case_doc(), task=1), "task: must be text"),
        (case_file(case_doc(), device=None), "device: must be text"),
        (case_file(case_doc(), sample_key=[]), "sample_key: must be text"),
        (case_file("x"), "cases.0: must be an object"),
        (case_file(cases=None), "cases: must be a list"),
    ],
)
def test_case_file_refusals(data: bytes, message: str) -> None:
    with pytest.raises(DataError) as exc:
        parse_cases(data)
    assert str(exc.value) == message


def test_case_file_limit_of_1000_cases() -> None:
    assert len(parse_cases(case_file(*[case_doc()] * 1000)).cases) == 1000
    with pytest.raises(DataError, match="^cases: more than 1000 items$"):
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


def test_warmup_calls_is_a_whole_number() -> None:
    with pytest.raises(DataError, match="^cases.0.timing.warmup_calls: must be a whole number$"):
        parse_result(result_doc({"id": "c", "outcome": "PASS", "timing": timing_doc(warmup_calls=2.9)}))


def test_a_lone_surrogate_in_a_candidates_text_is_written_as_its_escape() -> None:
    """A candidate's error text may hold a lone surrogate (raise RuntimeError("a\\ud800b") in its call): the
    result is still one the server reads, the text escaped, rather than refused whole (an infrastructure
    error, on any task)."""
    doc = SupervisorResult([CaseResult("c", Outcome.ERROR, "RuntimeError: a\ud800b\udfff")], ["x\udc80"], "none")
    got = parse_result(doc.to_json().encode())
    assert got.cases[0].reason == "RuntimeError: a\\ud800b\\udfff" and got.interference == ["x\\udc80"]


def test_round_trip_through_to_json() -> None:
    doc = SupervisorResult(
        [CaseResult("c", Outcome.PASS, "", {}, Timing([1.5], [0.5], [0.25], "max", 1))], ["x"], "none"
    )
    assert parse_result(doc.to_json().encode()) == doc
    assert json.loads(doc.to_json())["version"] == 1


def test_a_batch_timing_and_its_per_call_check_round_trip_one_level_deep() -> None:
    check = Sampled([3.1, 3.2], [3.0, 3.3], [0.2, 0.2], "per-call check", 0)
    timing = Timing([2.9], [2.8], [0.05], "stable", 24, batch=8, per_call=check)
    doc = SupervisorResult([CaseResult("c", Outcome.PASS, "", {}, timing)])
    assert parse_result(doc.to_json().encode()) == doc
    # a per-call check holds no check of its own: one nested deeper is not read
    deeper = json.loads(doc.to_json())
    deeper["cases"][0]["timing"]["per_call"]["per_call"] = deeper["cases"][0]["timing"]["per_call"].copy()
    parsed = parse_result(json.dumps(deeper).encode()).cases[0].timing
    assert parsed is not None and parsed.per_call == check and not hasattr(parsed.per_call, "per_call")


def test_to_json_refuses_nan() -> None:
    doc = SupervisorResult([CaseResult("c", Outcome.PASS, "", {"y": {"rms_ratio": math.nan}})])
    with pytest.raises(ValueError):
        doc.to_json()


def test_result_size_limit_both_sides() -> None:
    body = result_doc()
    assert parse_result(body + b" " * (MAX_RESULT_BYTES - len(body))).cases == []
    too_big = body + b" " * (MAX_RESULT_BYTES - len(body) + 1)
    with pytest.raises(DataError) as exc:
        parse_result(too_big)
    assert str(exc.value) == f"a result of {MAX_RESULT_BYTES + 1} bytes is over {MAX_RESULT_BYTES}"


P = {"id": "c", "outcome": "PASS"}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\xff", "not JSON: 'utf-8' codec can't decode byte 0xff in position 0: invalid start byte"),
        (b"nope", "not JSON: Expecting value: line 1 column 1 (char 0)"),
        (b"[" * 100000, "not JSON: maximum recursion depth exceeded while decoding a JSON array from a unicode string"),
        (b"[1]", "must be an object"),
        (result_doc(version=2), "version: 2, expected 1"),
        (result_doc(version=True), "version: True, expected 1"),
        (result_doc(version=1.0), "version: 1.0, expected 1"),
        (b'{"cases": []}', "version: None, expected 1"),
        (result_doc(cases=None), "cases: must be a list"),
        (result_doc(interference="x"), "interference: must be a list"),
        (result_doc(interference=[1]), "interference.0: must be text"),
        (result_doc(cpu_watch=None), "cpu_watch: must be text"),
        (result_doc(1), "cases.0: must be an object"),
        (result_doc({"id": "c", "outcome": "pass"}), "cases.0.outcome: must be one of: PASS, FAIL, FLAKY, ERROR"),
        (result_doc({"id": "c"}), "cases.0.outcome: missing"),
        (result_doc({"id": 3, "outcome": "PASS"}), "cases.0.id: must be text"),
        (result_doc({**P, "reason": None}), "cases.0.reason: must be text"),
        (result_doc({**P, "stats": []}), "cases.0.stats: must be an object"),
        (result_doc({**P, "stats": {"y": 1}}), "cases.0.stats.y: must be an object"),
        (result_doc({**P, "stats": {"y": {"a": None}}}), "cases.0.stats.y.a: must be a finite number"),
        (result_doc({**P, "timing": []}), "cases.0.timing: must be an object"),
        (result_doc({**P, "timing": timing_doc(null_ms=None)}), "cases.0.timing.null_ms: must be a list"),
        (result_doc({**P, "timing": {"baseline_ms": [1], "kernel_ms": [1]}}), "cases.0.timing.null_ms: missing"),
        (result_doc({**P, "timing": timing_doc(baseline_ms=[0])}), "cases.0.timing.baseline_ms.0: must be above zero"),
        (result_doc({**P, "timing": timing_doc(kernel_ms=[-1.5])}), "cases.0.timing.kernel_ms.0: must be above zero"),
        (result_doc({**P, "timing": timing_doc(stopped_by=1)}), "cases.0.timing.stopped_by: must be text"),
        (
            result_doc({**P, "timing": timing_doc(warmup_calls="3")}),
            "cases.0.timing.warmup_calls: must be a whole number",
        ),
        (
            result_doc({**P, "timing": timing_doc(early_cpu_share=False)}),
            "cases.0.timing.early_cpu_share: must be a finite number",
        ),
        (result_doc({**P, "timing": timing_doc(disturbed=[1])}), "cases.0.timing.disturbed.0: must be true or false"),
    ],
)
def test_result_refusals(data: bytes, message: str) -> None:
    with pytest.raises(DataError) as exc:
        parse_result(data)
    assert str(exc.value) == message


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan])
def test_non_finite_numbers_are_refused(bad: float) -> None:
    doc = {"version": 1, "cases": [{**P, "stats": {"y": {"rms_ratio": bad}}}]}
    with pytest.raises(DataError, match="^cases.0.stats.y.rms_ratio: must be a finite number$"):
        parse_result(json.dumps(doc).encode())  # Python's json writes and reads Infinity and NaN


def test_positive_means_above_zero_and_other_figures_may_be_zero_or_negative() -> None:
    got = parse_result(result_doc({**P, "timing": timing_doc(baseline_ms=[1e-300], idle_cpu_ms=0, cooled_s=-2)}))
    assert got.cases[0].timing is not None
    assert (got.cases[0].timing.baseline_ms, got.cases[0].timing.idle_cpu_ms) == ([1e-300], 0.0)
    assert got.cases[0].timing.cooled_s == -2.0


def test_list_limits_both_sides() -> None:
    assert len(parse_result(result_doc(interference=["x"] * 100)).interference) == 100
    with pytest.raises(DataError, match="^interference: more than 100 items$"):
        parse_result(result_doc(interference=["x"] * 101))
    assert len(parse_result(result_doc(*[P] * 1000)).cases) == 1000
    with pytest.raises(DataError, match="^cases: more than 1000 items$"):
        parse_result(result_doc(*[P] * 1001))
    assert len(parse_result(result_doc({**P, "warnings": ["w"] * 10})).cases[0].warnings) == 10
    with pytest.raises(DataError, match="^cases.0.warnings: more than 10 items$"):
        parse_result(result_doc({**P, "warnings": ["w"] * 11}))
    phases = {f"p{i}": 1.0 for i in range(schema.MAX_PHASES)}
    assert parse_result(result_doc(phases={**phases, "one more": 1.0})).phases == phases  # the first 200


def test_sample_limit_both_sides() -> None:
    ok = parse_result(result_doc({**P, "timing": timing_doc(kernel_ms=[1.0] * MAX_SAMPLES)}))
    assert ok.cases[0].timing is not None and len(ok.cases[0].timing.kernel_ms) == MAX_SAMPLES
    with pytest.raises(DataError, match="^cases.0.timing.kernel_ms: more than 10000 items$"):
        parse_result(result_doc({**P, "timing": timing_doc(kernel_ms=[1.0] * (MAX_SAMPLES + 1))}))


def test_text_is_cut_to_the_limit() -> None:
    got = parse_result(result_doc({"id": "c", "outcome": "FAIL", "reason": "r" * (MAX_TEXT + 5)}))
    assert got.cases[0].reason == "r" * MAX_TEXT
    got = parse_result(result_doc({**P, "warnings": ["w" * (MAX_TEXT + 1)]}, phases={"p" * 300: 1.0}))
    assert got.cases[0].warnings == ["w" * MAX_TEXT] and list(got.phases) == ["p" * 200]
