"""Proton's trace (profiling.proton_trace) read into IKET's records and summarised by iket_summary, on the
H200's real trace (tests/fixtures/proton, its README); the hostile files give one line and exit 2."""

from __future__ import annotations

import gzip
import json
import statistics
from pathlib import Path

import pytest

from kcoral.cli.main import run
from kcoral.profiling import iket_perfetto
from kcoral.profiling.iket_load import load
from kcoral.profiling.iket_summary import format_summary, summarize
from kcoral.profiling.proton import clock_mhz, job_summary

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "proton"
TRACE = FIXTURES / "h200-spin.chrome_trace"
#: what the kernel spins in each scope (SM clock cycles)
SPUN = {"first": 20_000, "second": 50_000}


def test_the_trace_holds_one_scope_event_per_warp_in_cycles() -> None:
    trace = load(TRACE)
    assert (trace.shape, trace.unit, len(trace.launches)) == ("proton", "cycles", 1)
    la = trace.launches[0]
    assert la.kernel == "spin_kernel" and la.skipped == 0
    assert {(r.loc.cta, r.loc.warp) for r in la.ranges if r.loc} == {((c, 0, 0), w) for c in range(4) for w in range(4)}
    raw = json.loads(TRACE.read_text())["traceEvents"]
    assert {r.loc.sm for r in la.ranges if r.loc} == {int(e["pid"].split()[1].removeprefix("Core")) for e in raw}


def test_per_scope_cycles_match_the_hand_calculation() -> None:
    # by hand from the raw JSON: dur (us at the trace's Frequency (MHz)) x MHz = cycles
    raw = json.loads(TRACE.read_text())["traceEvents"]
    hand = {
        name: statistics.median(e["dur"] * e["args"]["Frequency (MHz)"] for e in raw if e["name"] == name)
        for name in SPUN
    }
    doc = summarize(load(TRACE))
    assert doc["units"] == "cycles"
    scopes = {r["name"]: r for r in doc["launches"][0]["ranges"]}
    for name, spun in SPUN.items():
        assert scopes[name]["count"] == 16
        assert scopes[name]["median"] == pytest.approx(hand[name], abs=1)
        assert abs(scopes[name]["median"] - spun) / spun < 0.10  # the acceptance: within 10% of what was spun
    assert (scopes["first"]["min"], scopes["first"]["max"]) == (20103, 20110)
    assert scopes["second"]["median"] == 50067
    span = doc["launches"][0]["cta_span"]
    assert span["count"] == 4 and span["median"] == pytest.approx(70_000, rel=0.01)


def test_the_printed_summary_in_cycles_and_at_the_gpus_clock() -> None:
    lines = format_summary(summarize(load(TRACE), clock_mhz=1980))
    assert lines[0] == "times in SM clock cycles; at 1980 MHz 1 us = 1980 cycles"
    first = next(line for line in lines if line.strip().startswith("first"))
    assert first.split() == ["first", "-", "16", "20103", "20104", "20105", "20110", "10.153"]
    assert "scope" in lines[3] and "median us" in lines[3]


def test_the_jobs_facts_give_the_clock(tmp_path: Path) -> None:
    (tmp_path / "proton.chrome_trace").write_bytes(TRACE.read_bytes())
    assert job_summary(tmp_path)["units"] == "cycles" and clock_mhz(tmp_path) is None  # type: ignore[index]
    (tmp_path / "proton.json").write_text(json.dumps({"triton": "3.6.0", "sm_clock_khz": 1980000}))
    assert clock_mhz(tmp_path) == 1980.0 and job_summary(tmp_path)["clock_mhz"] == 1980.0  # type: ignore[index]
    (tmp_path / "proton.json").write_text('{"sm_clock_khz": true}')
    assert clock_mhz(tmp_path) is None
    assert job_summary(tmp_path / "nothing") is None


def test_summarize_and_plot_through_the_command(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    assert run(["proton", "summarize", str(TRACE), "--clock-mhz", "1980"]) == 0
    out = capfd.readouterr().out
    assert "launch 0: spin_kernel  span" in out and "second" in out
    assert run(["proton", "summarize", str(TRACE), "--json"]) == 0
    doc = json.loads(capfd.readouterr().out)
    assert doc["shape"] == "proton" and [r["name"] for r in doc["launches"][0]["ranges"]] == ["first", "second"]
    pytest.importorskip("matplotlib")
    png = tmp_path / "t.png"
    assert run(["proton", "plot", str(TRACE), "-o", str(png)]) == 0
    assert png.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("hostile-truncated.chrome_trace", "not JSON"),
        ("hostile-nesting-bomb.chrome_trace", "nested too deep"),
        ("hostile-no-events.chrome_trace", "no scope events"),
        ("absent.chrome_trace", "no such file"),
    ],
)
def test_hostile_files_give_one_line_and_exit_2(name: str, says: str, capfd: pytest.CaptureFixture[str]) -> None:
    assert run(["proton", "summarize", str(FIXTURES / name)]) == 2
    captured = capfd.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and says in captured.err
    assert "Traceback" not in captured.err


def test_a_tree_is_summarised_as_one_and_refused_where_a_trace_is_asked_for(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """``--data tree``'s file: kcoral proton summarize reads it by its name (profiling.proton_tree); under
    a trace's name, or given to plot, it is refused in one line that says what reads it."""
    tree = FIXTURES / "h200-spin-measure.hatchet"
    assert run(["proton", "summarize", str(tree)]) == 0 and "kernel spin_kernel" in capfd.readouterr().out
    renamed = tmp_path / "tree.chrome_trace"
    renamed.write_bytes(tree.read_bytes())
    for argv in (["summarize", str(renamed)], ["plot", str(tree), "-o", str(tmp_path / "t.png")]):
        assert run(["proton", *argv]) == 2
        err = capfd.readouterr().err
        assert err.count("\n") == 1 and "a Proton tree (.hatchet)" in err and "summarize FILE.hatchet" in err


def test_a_gzip_bomb_is_cut_at_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(iket_perfetto, "MAX_TRACE_BYTES", 1 << 20)
    bomb = tmp_path / "bomb.chrome_trace.gz"
    bomb.write_bytes(gzip.compress(b'{"traceEvents": [' + b" " * (4 << 20) + b"]}"))
    assert bomb.stat().st_size < 10_000
    assert run(["proton", "summarize", str(bomb)]) == 2
    err = capfd.readouterr().err
    assert err.count("\n") == 1 and "unzips to more than 1 MiB" in err


def test_escapes_in_names_are_printed_as_text(capfd: pytest.CaptureFixture[str]) -> None:
    assert run(["proton", "summarize", str(FIXTURES / "hostile-escapes.chrome_trace")]) == 0
    out = capfd.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\\x1b[2K" in out
    assert "forged line" in out and not any(line.startswith("forged line") for line in out.splitlines())
    assert run(["proton", "summarize", "--json", str(FIXTURES / "hostile-escapes.chrome_trace")]) == 0
    doc = json.loads(capfd.readouterr().out)
    assert doc["launches"][0]["counts"]["skipped_records"] == 1  # the dur written as a string
