"""``kcoral rerun``'s comparison, built from the typed report and receipt of both jobs: the rows
line up by workload id, the pins are compared field by field, and --json keeps the documents as the
server wrote them."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from rich.console import Console

from kcoral.cli.commands.rerun_cmd import Side, comparison, comparison_view
from kcoral.protocol.models import EvalSpec, ImageInfo, JobState, JobTimes, JobView, Verdict
from kcoral.tasks.documents import EvalReport, Receipt, parse
from tests.tasks.test_documents import REPORT

#: no timing asserted, nothing done to the engine that another file would see (scripts/test.sh)
pytestmark = pytest.mark.concurrent

RECEIPT = {"job": "j1", "task": "demo/softmax", "task_sha256": "t1", "image": "sha256:aa", "submission_sha256": "s1",
           "harness_version": "3", "finished": 1.0}  # fmt: skip


def view(job: str, digest: str) -> JobView:
    return JobView(
        id=job,
        owner="o",
        state=JobState.finished,
        spec=EvalSpec(task="demo/softmax"),
        verdict=Verdict.ok,
        image=ImageInfo(ref="kcoral-job:cpu", digest=digest),
        times=JobTimes(created=0.0),
    )


def side(job: str, report: dict[str, Any] | None, receipt: dict[str, Any] | None) -> Side:
    return Side(
        view(job, (receipt or {}).get("image", "sha256:view")),
        parse(EvalReport, report) if report else None,
        parse(Receipt, receipt) if receipt else None,
    )


def text(old: Side, new: Side) -> str:
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(comparison_view(old, new))
    return out.getvalue()


def test_rows_line_up_by_id_and_a_workload_only_one_side_has_shows_a_dash() -> None:
    faster = {**REPORT["workloads"][0], "kernel_ms": 0.5, "speedup": 4.0}
    extra = {"id": "tall", "params": {}, "timed": False, "verdict": "PASS", "stats": {}}
    new_report = {**REPORT, "workloads": [extra, faster], "flags": ["gpu busy"]}
    doc = comparison(side("j1", REPORT, RECEIPT), side("j2", new_report, {**RECEIPT, "job": "j2"}), 0)
    assert [w["id"] for w in doc["workloads"]] == ["standard", "wide", "tall"]
    assert doc["workloads"][0] == {
        "id": "standard",
        "old": {"verdict": "PASS", "kernel_ms": 1.0, "speedup": 2.0},
        "new": {"verdict": "PASS", "kernel_ms": 0.5, "speedup": 4.0},
    }
    assert doc["workloads"][1]["new"] == {"verdict": None, "kernel_ms": None, "speedup": None}
    assert doc["old"]["report"] == REPORT and doc["summary"]["old"] == REPORT["summary"]
    assert doc["pinned"] == ["images match", "task sha256s match", "submission sha256s match"]
    json.dumps(doc)  # what --json prints
    lines = text(side("j1", REPORT, RECEIPT), side("j2", new_report, {**RECEIPT, "job": "j2"})).splitlines()
    standard = next(line for line in lines if line.startswith("standard"))
    assert standard.split() == ["standard", "PASS", "PASS", "1.000000", "0.500000", "2.0000x", "4.0000x"]
    assert next(line for line in lines if line.startswith("wide")).split() == ["wide", "FAIL", "-", "-", "-", "-", "-"]
    assert next(line for line in lines if line.startswith("tall")).split() == ["tall", "-", "PASS", "-", "-", "-", "-"]
    assert "summary speedup: old 2.0000x [1.9000, 2.1000]" in "\n".join(lines)
    assert "new flagged: gpu busy" in lines


def test_a_changed_pin_is_called_out_by_name() -> None:
    moved = {**RECEIPT, "job": "j2", "image": "sha256:bb", "task_sha256": "t2"}
    doc = comparison(side("j1", REPORT, RECEIPT), side("j2", REPORT, moved), 1)
    assert doc["pinned"] == ["images DIFFER", "task sha256s DIFFER", "submission sha256s match"]
    assert doc["exit_code"] == 1
    out = text(side("j1", REPORT, RECEIPT), side("j2", REPORT, moved))
    assert "old job j1: ok, image sha256:aa" in out and "new job j2: ok, image sha256:bb" in out


def test_without_documents_the_job_images_are_compared() -> None:
    old, new = side("j1", None, None), side("j2", None, None)
    assert comparison(old, new, 0)["pinned"] == ["image digests match"]
    changed = Side(view("j2", "sha256:other"))
    assert comparison(old, changed, 0)["pinned"] == ["image digests DIFFER"]
    assert "WORKLOAD" not in text(old, new)  # no table without reports
    assert comparison(old, new, 0)["summary"] == {"old": {}, "new": {}}
