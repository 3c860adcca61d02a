"""report.json and receipt.json as the client parses them (tasks.documents): a round trip keeps the
JSON object exactly; what a server never writes is refused with a clear message."""

from __future__ import annotations

import dataclasses
import json

import pytest

from kcoral.tasks.documents import DocumentError, EvalReport, Receipt, parse, parse_receipt, parse_report
from kcoral.tasks.harness.schema import Outcome

REPORT = {
    "task": "demo/softmax",
    "holdout": "PASS",
    "check": False,
    "holdout_probes": 3,
    "workloads": [
        {"id": "standard", "params": {"rows": 8}, "timed": True, "verdict": "PASS", "reason": "", "stats": {},
         "baseline_ms": 2.0, "kernel_ms": 1.0, "speedup": 2.0, "speedup_lo": 1.9, "speedup_hi": 2.1, "samples": 60,
         "stopped_by": "stable", "protocol_ms": 0.1, "idle_cpu_ms": 0.0, "idle_cpu_share": 0.0,
         "early_cpu_ms": 0.0, "early_cpu_share": 0.0},
        {"id": "wide", "params": {}, "timed": False, "verdict": "FAIL", "reason": "y: 3 elements", "stats": {}},
    ],
    "flags": [],
    "cpu_watch": "cgroup v2",
    "wake_latency": "0 us",
    "position": "",
    "passed": 1,
    "total": 2,
    "summary": {"speedup": 2.0, "speedup_lo": 1.9, "speedup_hi": 2.1, "baseline_ms": 2.0, "kernel_ms": 1.0,
                "min_speedup": 2.0, "max_speedup": 2.0},
    "inconclusive": [],
    "telemetry": {},
    "phases": {"start": 3.5, "holdout": 1.25},
    "lines": ["holdout correctness: PASS"],
}  # fmt: skip


def test_a_report_round_trips_to_the_same_object() -> None:
    report = parse_report(json.dumps(REPORT))
    assert report.document() == REPORT
    assert report.workloads[1].verdict is Outcome.FAIL and report.workloads[1].speedup is None
    assert "speedup" not in report.document()["workloads"][1]  # absent, not null: the figure does not exist
    assert not report.ok and parse(EvalReport, {**REPORT, "passed": 2}).ok


@pytest.mark.parametrize(
    ("change", "where"),
    [({"holdout": "MAYBE"}, "holdout"), ({"passed": "two"}, "passed"), ({"task": None}, "task"),
     ({"workloads": [{"id": "w"}]}, "workloads.0")],
)  # fmt: skip
def test_a_report_a_server_never_writes_is_refused(change: dict[str, object], where: str) -> None:
    with pytest.raises(DocumentError, match=f"EvalReport: {where}"):
        parse_report(json.dumps({**REPORT, **change}))


def test_not_json_is_refused() -> None:
    with pytest.raises(DocumentError, match="EvalReport"):
        parse_report(b"\xff not json")


def test_a_receipt_round_trips_and_needs_its_pins() -> None:
    timings = {"standard": {"baseline_ms": [1.0], "kernel_ms": [0.5], "protocol_ms": [0.1]}}
    receipt = {"job": "j", "task": "demo/softmax", "task_version": "1", "task_sha256": "ab", "image": "sha256:cd",
               "submission_sha256": "ef", "harness_version": "01", "gpus": [], "telemetry": {},
               "seed_hashes": {"c00": "12"}, "timings": timings, "finished": 1.5}  # fmt: skip
    assert parse_receipt(json.dumps(receipt)).document() == receipt
    assert isinstance(parse_receipt(json.dumps(receipt)), Receipt)
    with pytest.raises(DocumentError, match="Receipt: image"):
        parse_receipt(json.dumps({k: v for k, v in receipt.items() if k != "image"}))


def test_what_a_minimal_document_means_is_written_out_in_full() -> None:
    """The defaults are part of the format: a reader of a minimal report or receipt gets exactly these."""
    row = {"id": "w", "params": {}, "timed": False, "verdict": "PASS"}
    minimal = {"task": "t", "holdout": "PASS", "holdout_probes": 1, "passed": 0, "total": 0, "workloads": [row]}
    assert parse_report(json.dumps(minimal)).document() == {
        **minimal,
        "workloads": [{**row, "reason": "", "stats": {}}],
        "check": False,
        "flags": [],
        "cpu_watch": "",
        "wake_latency": "",
        "position": "",
        "inconclusive": [],
        "telemetry": {},
        "phases": {},
        "lines": [],
    }
    assert parse_report(json.dumps({k: v for k, v in minimal.items() if k != "workloads"})).workloads == []
    check = {k: v for k, v in {**minimal, "check": True, "total": 1}.items() if k != "holdout"}
    assert parse_report(json.dumps(check)).holdout is None and not parse_report(json.dumps(check)).ok
    assert parse_report(json.dumps({**check, "passed": 1})).ok  # a check passes without a holdout
    pins = {"job": "j", "task": "t", "task_sha256": "a", "image": "i", "submission_sha256": "s",
            "harness_version": "1", "finished": 0.0}  # fmt: skip
    assert parse_receipt(json.dumps(pins)).document() == {
        **pins, "task_version": "", "gpus": [], "telemetry": {}, "seed_hashes": {}, "timings": {}
    }  # fmt: skip
    sample = parse_receipt(json.dumps({**pins, "timings": {"w": {}}})).timings["w"]
    assert (sample.baseline_ms, sample.kernel_ms, sample.protocol_ms) == (None, None, None)


def test_documents_are_immutable_and_know_their_file_names() -> None:
    report = parse_report(json.dumps(REPORT))
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.task = "other"  # type: ignore[misc]
    assert (EvalReport.FILE, Receipt.FILE) == ("report.json", "receipt.json")
    assert type(report.document()["holdout"]) is str  # JSON values, not the enum objects
    assert parse_report(json.dumps({**REPORT, "added_later": 1})).document() == REPORT  # newer fields ignored


def test_a_refusal_names_the_model_the_place_and_the_reason_exactly() -> None:
    with pytest.raises(DocumentError) as info:
        parse_report(json.dumps({**REPORT, "passed": "two"}))
    assert str(info.value) == "EvalReport: passed: must be a whole number"
    with pytest.raises(DocumentError) as info:
        parse_receipt(b"[]")
    assert str(info.value) == "Receipt: must be an object"
    with pytest.raises(DocumentError) as info:  # a nested row: the path to it, the first wrong field in order
        parse_report(json.dumps({**REPORT, "workloads": [{**REPORT["workloads"][0], "basis": "gross", "timed": 1}]}))
    assert str(info.value) == "EvalReport: workloads.0.timed: must be true or false"
    with pytest.raises(DocumentError) as info:
        parse_report(json.dumps({**REPORT, "workloads": [{**REPORT["workloads"][0], "basis": "gross"}]}))
    assert str(info.value) == "EvalReport: workloads.0.basis: must be 'net' or 'raw'"
    raw = {**REPORT, "workloads": [{**REPORT["workloads"][0], "basis": "raw"}]}
    assert parse_report(json.dumps(raw)).workloads[0].basis == "raw"  # a Literal's own value, not its first
