"""The timing method: the server's defaults (tasks.harness.schema.TimingMethod), a manifest's settings over
them (tasks.cases.timing_method), and the case file's strict copy of it (tasks.harness.schema)."""

from __future__ import annotations

import json
from dataclasses import FrozenInstanceError, asdict, fields

import pytest

from kcoral.protocol.typeddata import DataError
from kcoral.runner.limits import Limits
from kcoral.tasks.cases import timing_method
from kcoral.tasks.harness.schema import TimingMethod, parse_cases
from tests.tasks.documents import TIMING_DOC


def test_the_server_defaults_are_the_methods_own() -> None:
    """One timing class: the server's limits hold a TimingMethod, its defaults the class's."""
    assert type(Limits().eval_timing) is TimingMethod and Limits().eval_timing == TimingMethod()
    assert len(fields(TimingMethod)) == 30


def test_a_manifest_overrides_some_settings_and_keeps_the_rest() -> None:
    method = timing_method(TimingMethod(), {"timing": {"max_reps": 60, "budget_s": 6}})
    assert method.max_reps == 60 and method.budget_s == 6
    assert method.idle_cpu_ms == TimingMethod().idle_cpu_ms and method.min_reps == TimingMethod().min_reps


def test_an_unknown_manifest_setting_is_refused() -> None:
    with pytest.raises(ValueError, match=r"unknown timing settings \['max_rep'\]"):
        timing_method(TimingMethod(), {"id": "x/y", "timing": {"max_rep": 60}})


def case_file(timing: object) -> bytes:
    return json.dumps({"task": "t", "device": "cpu", "sample_key": "k", "cases": [], "timing": timing}).encode()


def test_the_case_file_carries_the_whole_method() -> None:
    assert asdict(parse_cases(case_file(TIMING_DOC)).timing) == TIMING_DOC


@pytest.mark.parametrize(
    "change",
    [
        {"max_reps": None},  # a missing setting: the harness has no defaults
        {"extra": 1.0},
        {"min_reps": 2.5},
        {"max_reps": True},
        {"flush_bytes": -1},
        {"interval_target": float("nan")},
        {"warmup_s": -1.0},
        {"idle_cpu_ms": "0.25"},
        {"min_reps": 400},  # above max_reps: a method that cannot be followed
        {"shared_core_share": 2.0},
    ],
)
def test_a_bad_method_is_refused(change: dict[str, object]) -> None:
    doc = {**TIMING_DOC, **change}
    doc = {k: v for k, v in doc.items() if v is not None}
    with pytest.raises(DataError, match="timing"):
        parse_cases(case_file(doc))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"max_reps": 10.5}, "timing.max_reps: must be a whole number"),
        ({"flush_bytes": 1.5}, "timing.flush_bytes: must be a whole number"),
        ({"min_reps": -1}, "timing.min_reps: -1 is negative"),
        ({"warmup_s": -0.5}, "timing.warmup_s: -0.5 is negative"),
        ({"min_reps": 400}, "timing.min_reps: 400 is above max_reps 300"),
        ({"disturbed_limit": 1.5}, "timing.disturbed_limit: 1.5 is a share: from 0 to 1"),
        ({"scorable_ratio": 0.5}, "timing.scorable_ratio: 0.5 is a ratio of at least 1"),
        ({"extra": 1}, "timing.extra: no such field (a typo is refused)"),
    ],
)
def test_each_refusal_names_the_setting_and_the_value(change: dict[str, object], message: str) -> None:
    with pytest.raises(DataError) as info:
        parse_cases(case_file({**TIMING_DOC, **change}))
    assert str(info.value).endswith(message)


def test_zero_is_a_setting_not_a_refusal() -> None:
    """No cache flush, no warm-up: 0 is a valid count and a valid duration."""
    doc = {**TIMING_DOC, "flush_bytes": 0, "min_reps": 0, "warmup_s": 0.0}
    method = parse_cases(case_file(doc)).timing
    assert (method.flush_bytes, method.min_reps, method.warmup_s) == (0, 0, 0.0)


def test_a_method_that_is_not_an_object_or_misses_fields_is_named() -> None:
    with pytest.raises(DataError) as info:
        parse_cases(case_file([1, 2]))
    assert str(info.value) == "timing: must be an object"
    with pytest.raises(DataError) as info:
        parse_cases(case_file({**TIMING_DOC, "idle_cpu_ms": "0.25"}))
    assert str(info.value) == "timing.idle_cpu_ms: must be a finite number"
    missing = {k: v for k, v in TIMING_DOC.items() if k != "budget_s"}
    with pytest.raises(DataError) as info:
        parse_cases(case_file(missing))
    assert str(info.value) == "timing.budget_s: missing"


def test_a_manifests_setting_of_the_wrong_type_is_refused_with_the_task_and_the_setting() -> None:
    with pytest.raises(ValueError, match=r"^task x/y: timing max_reps: must be a whole number$"):
        timing_method(TimingMethod(), {"id": "x/y", "timing": {"max_reps": "60"}})
    with pytest.raises(ValueError, match=r"^task x/y: timing min_reps: 400 is above max_reps 300$"):
        timing_method(TimingMethod(), {"id": "x/y", "timing": {"min_reps": 400}})


def test_the_method_the_supervisor_gets_cannot_be_changed() -> None:
    method = parse_cases(case_file(TIMING_DOC)).timing
    with pytest.raises(FrozenInstanceError):
        method.budget_s = 1.0  # type: ignore[misc]


@pytest.mark.parametrize(
    "manifest",
    [
        {"id": "x/y", "device": "cpu", "timing": {"batch": 8, "graph": True}},  # no CUDA graph on a CPU
        {"id": "x/y", "device": "cuda", "timing": {"graph": True}},  # graphs are captured batches
        {"id": "x/y", "device": "cuda", "timing": {"batch": 1, "graph": True}},
    ],
)
def test_graph_replay_needs_a_cuda_task_timed_in_batches(manifest: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="timing graph needs a CUDA task timed in batches"):
        timing_method(TimingMethod(), manifest)


def test_graph_replay_is_a_flag_on_the_wire() -> None:
    method = timing_method(TimingMethod(), {"device": "cuda", "timing": {"batch": 8, "graph": True}})
    assert (method.batch, method.graph) == (8, True)
    assert parse_cases(case_file({**TIMING_DOC, "batch": 8, "graph": True})).timing.graph is True
    with pytest.raises(DataError, match="^timing.graph: must be true or false$"):
        parse_cases(case_file({**TIMING_DOC, "graph": 1}))


def test_an_operator_sets_the_method_and_the_judges_rules_and_a_task_refines_them() -> None:
    """``timing_NAME`` limits are the server's method (runner.limits.with_limits); a task's manifest sets
    its own over them; a task's mode (batch, graph) is the task's alone."""
    from kcoral.runner.limits import settable, with_limits

    job, _ = with_limits({"timing_budget_s": "12", "timing_shared_core_share": "0.05", "timing_per_call_checks": "60"})
    assert (job.eval_timing.budget_s, job.eval_timing.shared_core_share, job.eval_timing.per_call_checks) == (
        12,
        0.05,
        60,
    )
    method = timing_method(job.eval_timing, {"timing": {"budget_s": 6}})
    assert method.budget_s == 6 and method.shared_core_share == 0.05
    table = settable()
    assert table["timing_shared_core_share"] == (0.1, "ratio") and table["timing_shared_core_ms"] == (100.0, "ms")
    assert "timing_batch" not in table and "timing_graph" not in table
    for bad in ({"timing_batch": "4"}, {"timing_min_reps": "301"}, {"timing_inconclusive_ratio": "0.5"}):
        with pytest.raises(ValueError, match="timing"):
            with_limits(bad)
