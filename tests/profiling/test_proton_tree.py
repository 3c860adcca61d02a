"""Proton's tree (``--data tree``: proton.hatchet) read and summarised (profiling.proton_tree): the real one
the H200 wrote for the two-scope spin kernel, and hostile ones (one line, exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kcoral.cli.main import run
from kcoral.profiling import proton_tree

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "proton"
H200 = FIXTURES / "h200-spin-measure.hatchet"


def test_the_h200_tree_gives_each_scopes_cycles_per_warp_and_microseconds() -> None:
    doc = proton_tree.load(H200)
    assert doc["clock_khz"] == 1980000
    (kernel,) = doc["kernels"]
    scopes = {s["name"]: s for s in kernel["scopes"]}
    assert kernel["name"] == "spin_kernel" and list(scopes) == ["first", "second"]
    assert scopes["first"]["normalized_cycles"] == 20105 and scopes["first"]["cycles"] == 321680  # 16 warps
    assert scopes["second"]["normalized_cycles"] == 50067
    assert scopes["second"]["us"] == pytest.approx(50067 / 1980)  # cycles at the device's 1980 MHz
    lines = proton_tree.format_lines(doc)
    assert lines[0] == "Proton tree; SM clock 1980 MHz"
    assert "  first: 20,105 cycles per warp (321,680 in all), 10.15 us" in lines


def test_nested_scopes_keep_their_path_and_depth() -> None:
    leaf = {"frame": {"name": "inner"}, "metrics": {"normalized_cycles": 5}, "children": []}
    outer = {"frame": {"name": "outer"}, "metrics": {"normalized_cycles": 9}, "children": [leaf]}
    doc = [{"frame": {"name": "ROOT"}, "children": [{"frame": {"name": "k"}, "children": [outer]}]}]
    scopes = proton_tree.summarize(doc)["kernels"][0]["scopes"]
    assert [(s["path"], s["depth"]) for s in scopes] == [("outer", 0), ("outer/inner", 1)]
    assert proton_tree.format_lines(proton_tree.summarize(doc))[-1] == "    inner: 5 cycles per warp"


def _deep(depth: int) -> dict:
    node: dict = {"frame": {"name": "s"}, "children": []}
    for _ in range(depth):
        node = {"frame": {"name": "s"}, "children": [node]}
    return node


@pytest.mark.parametrize(
    ("doc", "why"),
    [
        ([1], "not a Proton tree"),
        ({"frame": {}}, "not a Proton tree"),
        ([{"frame": {}, "children": "x"}], "children are not a list"),
        ([{"frame": {}, "children": [{"frame": {"name": "k"}, "children": [_deep(100)]}]}], "nested deeper"),
        ([{"frame": {}, "children": [{"frame": {}, "children": [_deep(1)] * 60_000}]}], "more than 100000 nodes"),
    ],
)
def test_what_is_no_readable_tree_says_why(doc: object, why: str) -> None:
    with pytest.raises(proton_tree.TreeError, match=why):
        proton_tree.summarize(doc)


def test_forged_figures_are_left_out_and_names_are_the_callers_to_escape() -> None:
    scope = {"frame": {"name": "s"}, "metrics": {"normalized_cycles": 1e308, "cycles": -5}, "children": []}
    doc = [{"frame": {}, "children": [{"frame": {"name": "k\x1b[31m"}, "children": [scope]}]}, {"CUDA": "x"}]
    summary = proton_tree.summarize(doc)
    assert summary["clock_khz"] is None
    assert summary["kernels"][0]["scopes"][0] | {"path": "s"} == {
        "path": "s", "name": "s", "depth": 0, "normalized_cycles": None, "cycles": None, "us": None
    }  # fmt: skip


def test_kcoral_proton_summarize_reads_a_tree(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    assert run(["proton", "summarize", str(H200)]) == 0
    out = capfd.readouterr().out
    assert "kernel spin_kernel: 2 scopes" in out and "second: 50,067 cycles per warp" in out
    assert run(["proton", "summarize", str(H200), "--json"]) == 0
    assert json.loads(capfd.readouterr().out)["kernels"][0]["name"] == "spin_kernel"
    escaped = tmp_path / "esc.hatchet"
    escaped.write_text(json.dumps([{"frame": {}, "children": [{"frame": {"name": "k\x1b[2J"}, "children": []}]}]))
    assert run(["proton", "summarize", str(escaped)]) == 0
    assert "k\\x1b[2J" in capfd.readouterr().out
    bad = tmp_path / "bad.hatchet"
    bad.write_text("[1]")
    assert run(["proton", "summarize", str(bad)]) == 2
    assert capfd.readouterr().err.count("\n") == 1
    assert run(["proton", "summarize", str(tmp_path / "absent.hatchet")]) == 2
    link = tmp_path / "fifo.hatchet"
    __import__("os").mkfifo(link)
    assert run(["proton", "summarize", str(link)]) == 2  # never blocks on a FIFO: a regular file only
