"""The ncu report summary: the CSV fallback on a fixture, the ncu_report path with a stand-in module."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kcoral.profiling import ncu_summary
from kcoral.profiling.ncu_summary import (
    advice_from_rule,
    format_kernel_lines,
    parse_details_csv,
    summarize_with_module,
    write_summary,
)
from tests.profiling.conftest import FIXTURES


def test_csv_fallback() -> None:
    kernels = parse_details_csv((FIXTURES / "ncu_details.csv").read_text())
    assert [k["name"] for k in kernels] == ["matmul_kernel", "softmax_kernel"]
    mm, sm = kernels
    assert mm["duration_ns"] == pytest.approx(1_234_500.0)  # 1,234.50 usecond
    assert mm["memory_throughput_pct"] == 81.25  # the % row, not the Tbyte/s one
    assert mm["compute_throughput_pct"] == 42.10
    assert mm["registers_per_thread"] == 168
    assert mm["achieved_occupancy_pct"] == 12.37
    assert (mm["grid"], mm["block"]) == ("(1024, 1, 1)", "(128, 1, 1)")
    assert [(a["rule"], a["type"], a["speedup_pct"]) for a in mm["advice"]] == [
        ("SOLBottleneck", "OPT", 35.5),
        ("AchievedOccupancy", "OPT", 0.8),
    ]
    assert mm["advice"][0]["message"].startswith("Memory is more heavily utilized")
    assert sm["duration_ns"] == 5600.0
    assert sm["memory_throughput_pct"] is None and sm["compute_throughput_pct"] == 3.5
    assert sm["registers_per_thread"] is None and sm["advice"] == []


def test_csv_without_header() -> None:
    assert parse_details_csv("==PROF== nothing profiled\n") == []


class FakeMetric:
    def __init__(self, value: Any, unit: str) -> None:
        self._value, self._unit = value, unit

    def value(self) -> Any:
        return self._value

    def unit(self) -> str:
        return self._unit


class FakeAction:
    def __init__(self, name: str, metrics: dict[str, tuple[Any, str]], rules: list[Any]) -> None:
        self._name, self._metrics, self._rules = name, metrics, rules

    def name(self, base: int | None = None) -> str:
        return self._name if base is None else f"{self._name}(float*)"

    def metric_by_name(self, name: str) -> FakeMetric | None:
        return FakeMetric(*self._metrics[name]) if name in self._metrics else None

    def rule_results_as_dicts(self) -> list[Any]:
        return self._rules


def fake_module(actions: list[FakeAction]) -> Any:
    rng = SimpleNamespace(num_actions=lambda: len(actions), action_by_idx=lambda i: actions[i])
    context = SimpleNamespace(num_ranges=lambda: 1, range_by_idx=lambda i: rng)
    return SimpleNamespace(load_report=lambda path: context, IAction=SimpleNamespace(NameBase_DEMANGLED=1))


def test_ncu_report_path() -> None:
    metrics = {
        ncu_summary.DURATION: (2.5, "usecond"),
        ncu_summary.MEMORY: (70.0, "%"),
        ncu_summary.COMPUTE: (30.5, "%"),
        ncu_summary.REGISTERS: (40, "register/thread"),
        ncu_summary.OCCUPANCY: (88.0, "%"),
        ncu_summary.GRID: (132, ""),
        ncu_summary.BLOCK: (256, ""),
    }
    rules = [
        {
            "rule_identifier": "SOLBottleneck",
            "section_identifier": "SpeedOfLight",
            "rule_message": {"title": "Bottleneck", "message": "Memory bound.", "type": "OPT"},
            "speedup_estimation": {"type": "global", "speedup": 12.0},
        },
        # some ncu versions send the nested dicts as their Python repr
        {
            "rule_identifier": "Occupancy",
            "rule_message": "{'title': 'Occ', 'message': 'Low occupancy.', 'type': 'WRN'}",
            "speedup_estimation": "{'type': 'local', 'speedup': 40.0}",
        },
        {"rule_identifier": "Empty", "rule_message": {"title": "", "message": "", "type": "INF"}},
    ]
    kernels = summarize_with_module(fake_module([FakeAction("kern", metrics, rules)]), "r.ncu-rep")
    assert kernels == [
        {
            "id": 0,
            "name": "kern(float*)",
            "grid": 132,
            "block": 256,
            "duration_ns": 2500.0,
            "memory_throughput_pct": 70.0,
            "compute_throughput_pct": 30.5,
            "registers_per_thread": 40.0,
            "achieved_occupancy_pct": 88.0,
            "advice": [
                {"rule": "Occupancy", "title": "Occ", "type": "WRN", "message": "Low occupancy.", "speedup_pct": 40.0},
                {
                    "rule": "SOLBottleneck",
                    "title": "Bottleneck",
                    "type": "OPT",
                    "message": "Memory bound.",
                    "speedup_pct": 12.0,
                },
            ],
        }
    ]
    text = "\n".join(format_kernel_lines({"kernels": kernels, "errors": []}))
    assert "duration 2.50 us  memory 70.0%  compute(SM) 30.5%  registers 40  occupancy 88.0%" in text
    assert "- Occ (est. speedup 40.0%): Low occupancy." in text


def test_old_style_rule_dicts() -> None:
    item = advice_from_rule({"rule_name": "X", "message_for_display": "do Y", "estimated_speedup_pct": "5"})
    assert item == {"rule": "X", "title": None, "type": None, "message": "do Y", "speedup_pct": 5.0}
    assert advice_from_rule({"rule_identifier": "Z"}) is None


def test_write_summary_without_a_report(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    doc = write_summary(str(tmp_path / "missing.ncu-rep"), str(out))
    assert json.loads(out.read_text()) == doc
    assert doc["kernels"] == [] and "no report" in doc["errors"][0]


def test_summary_falls_back_to_csv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No ncu_report module: the fake ncu's --import --csv output is parsed."""
    fake = tmp_path / "ncu"
    fake.write_text(f"#!/bin/sh\ncat {FIXTURES / 'ncu_details.csv'}\n")
    fake.chmod(0o755)
    monkeypatch.setattr(ncu_summary, "import_ncu_report", lambda ncu=None: None)
    report = tmp_path / "r.ncu-rep"
    report.write_bytes(b"x")
    doc = write_summary(str(report), str(tmp_path / "s.json"), ncu=str(fake))
    assert doc["source"] == "csv" and len(doc["kernels"]) == 2


def test_no_ncu_anywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ncu_summary, "import_ncu_report", lambda ncu=None: None)
    monkeypatch.setattr(ncu_summary, "find_ncu", lambda explicit=None: None)
    with pytest.raises(ncu_summary.SummaryError, match="neither the ncu_report module nor an ncu binary"):
        ncu_summary.summarize(str(tmp_path / "r.ncu-rep"))


def test_module_dirs_follow_the_ncu_install(tmp_path: Path) -> None:
    install = tmp_path / "opt" / "nsight-compute" / "2025.3.1"
    (install / "extras" / "python").mkdir(parents=True)
    (install / "extras" / "python" / "ncu_report.py").write_text("")
    (install / "ncu").write_text("#!/bin/sh\n")
    (install / "ncu").chmod(0o755)
    link = tmp_path / "bin" / "ncu"
    link.parent.mkdir()
    link.symlink_to(install / "ncu")
    assert ncu_summary.module_dirs(str(link))[0] == str(install / "extras" / "python")
