"""The timeline's pieces without torch: the options and the Python-only check (profiling.gputrace), the
recorder's way of running a program (profiling.gputrace_record), the reader and the summary of the H200's
real trace and of hostile files (gputrace_load, gputrace_summary), the PNG."""

from __future__ import annotations

import gzip
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from kcoral.profiling import gputrace, gputrace_load, gputrace_record
from kcoral.profiling.gputrace_load import TimelineError, load
from kcoral.profiling.gputrace_summary import format_lines, kernel_label, percentile, summarize

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "timeline"
REAL = FIXTURES / "h200-two-streams.json"


# --- options and command -------------------------------------------------------------------------------------


def test_options_are_bare_flags_from_the_allow_list() -> None:
    assert gputrace.normalise_options(["--with-stack", "--record-shapes"]) == ["--record-shapes", "--with-stack"]
    for bad, why in [
        (["--nsys"], "Nsight Systems is not available"),
        (["--trace=/job/input/x"], "the server chooses where the trace is written"),
        (["--record-shapes=yes"], "takes no value"),
        (["--with-stack", "--with-stack"], "given twice"),
        (["--profile-memory"], "not known"),
    ]:
        with pytest.raises(gputrace.TimelineOptionError, match=why):
            gputrace.normalise_options(bad)


@pytest.mark.parametrize(
    "command",
    [["python", "bench.py", "-n", "3"], ["python3", "-m", "pkg.bench"], ["python3.12", "-c", "print(1)"]],
)
def test_python_commands_are_recorded(command: list[str]) -> None:
    argv = gputrace.build_command(["--record-shapes"], command, "/venv/bin/python")
    assert argv[:6] == ["/venv/bin/python", "-m", gputrace.RECORDER, "--trace", "/job/out/timeline.trace.json",
                        "--record-shapes"]  # fmt: skip
    assert argv[argv.index("--") + 1 :] == command[1:]


@pytest.mark.parametrize(
    ("command", "why"),
    [
        (["bash", "run.sh"], "records Python programs only.*not 'bash'"),
        (["/usr/bin/python3", "x.py"], "records Python programs only"),
        (["python"], "python alone runs nothing"),
        (["python", "-u", "x.py"], "python options such as '-u' are not passed on"),
        (["python", "-m"], "python -m needs its module"),
        (["python", "-c", ""], "python -c needs its code"),
        ([], "no command to record"),
    ],
)
def test_other_commands_are_refused_in_one_line(command: list[str], why: str) -> None:
    with pytest.raises(gputrace.TimelineOptionError, match=why) as err:
        gputrace.check_command(command)
    assert "\n" not in str(err.value)


# --- the recorder's way of running the program (no torch needed) ---------------------------------------------


class FakeProfiler:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def start(self) -> None:
        self.calls.append("start")

    def stop(self) -> None:
        self.calls.append("stop")

    def export_chrome_trace(self, path: str) -> None:
        self.calls.append("export")
        Path(path).write_text('{"traceEvents": []}')


@pytest.fixture
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """sys.argv and sys.path restored afterwards, working in tmp_path."""
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    ("body", "code"),
    [("pass", 0), ("raise SystemExit(3)", 3), ("sys.exit('bad')", 1), ("raise ValueError('boom')", 1)],
)
def test_the_trace_is_written_however_the_program_ends(isolated: Path, body: str, code: int) -> None:
    script = isolated / "prog.py"
    script.write_text(f"import sys\nassert __name__ == '__main__' and sys.argv[1:] == ['a']\n{body}\n")
    profiler = FakeProfiler()
    trace = isolated / "t.json"
    assert gputrace_record.record(str(trace), [str(script), "a"], profiler) == code
    assert profiler.calls == ["start", "stop", "export"] and trace.is_file()


def test_modules_and_code_run_as_python_would(isolated: Path, capfd: pytest.CaptureFixture[str]) -> None:
    (isolated / "mod_here.py").write_text("import sys\nprint('module', __name__, sys.argv[1:])\n")
    assert gputrace_record.run_target(["-m", "mod_here", "x"]) == 0
    assert gputrace_record.run_target(["-c", "import sys; print('code', __name__, sys.argv)", "y"]) == 0
    out = capfd.readouterr().out
    assert "module __main__ ['x']" in out and "code __main__ ['-c', 'y']" in out
    assert gputrace_record.main(["--trace", "t.json"]) == 2  # no --
    assert gputrace_record.main(["--trace", "t.json", "--", "-m"]) == 2


# --- the reader and the summary ------------------------------------------------------------------------------


def test_the_real_trace_summarised() -> None:
    doc = summarize(load(REAL))
    assert doc["counts"] == {"kernel": 7, "memcpy": 1, "memset": 1, "sync": 0, "calls": 30, "streams": 2}
    assert doc["recorder"]["cupti_version"] == 130001 and doc["recorder"]["devices"] == ["NVIDIA H200"]
    gemm = doc["top_kernels"][0]
    assert gemm["count"] == 4 and gemm["streams"] == ["13"] and gemm["share"] > 0.95
    s13, s17 = doc["streams"]
    assert (s13["stream"], s13["kernels"], s17["stream"], s17["kernels"]) == ("13", 4, "17", 3)
    assert s13["threads"] == s17["threads"] == ["thread 792 (python3)"]
    assert s13["gaps"]["count"] == 3 and s13["gaps"]["max"] < 5  # back to back: about a microsecond
    # stream 17: relu, the 20 ms host sleep, sigmoid, a memset, sum: both gaps far above 20 ms
    assert s17["gaps"]["count"] == 2 and s17["gaps"]["median"] > 20_000 and s17["largest_gap"]["gap"] > 20_000
    assert s13["copies"][0]["bytes"] == 16 << 20 and s17["memsets"][0]["count"] == 1
    assert {h["name"]: h["count"] for h in doc["host_syncs"]} == {"cudaDeviceSynchronize": 3,
                                                                  "cudaStreamSynchronize": 1}  # fmt: skip
    lines = format_lines(doc)
    assert lines[0].startswith("timeline: 7 kernels, 1 copy, 1 memset, 0 syncs on 2 streams over 233.653 ms")
    assert any(line.startswith("  gaps between kernels: median 73.561 ms, p90 79.153 ms") for line in lines)
    json.dumps(doc)


def test_a_cpu_only_trace_says_there_is_no_gpu_activity(tmp_path: Path) -> None:
    trace = tmp_path / "cpu.json"
    trace.write_text(json.dumps([{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1.0, "dur": 2.0}]))
    assert format_lines(summarize(load(trace))) == ["timeline: no GPU activity in 1 trace events"]


def test_percentiles_and_kernel_labels() -> None:
    assert percentile([1.0], 0.9) == 1.0 and percentile([0.0, 10.0], 0.9) == 9.0
    assert kernel_label("void f<int, g<h<x>>>(float*)") == "f<int, g<...>>"
    assert kernel_label("k\x1b[31m") == "k\\x1b[31m"


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("hostile-truncated.json", "not JSON"),
        ("hostile-deep.json.gz", "JSON nested too deep"),
        ("hostile-not-a-trace.json", "not a Chrome trace"),
    ],
)
def test_hostile_files_raise_one_line(name: str, why: str) -> None:
    with pytest.raises(TimelineError, match=why) as err:
        load(FIXTURES / name)
    assert "\n" not in str(err.value)


def test_bombs_and_odd_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "digits.json").write_text("[" + "9" * 5000 + "]")
    with pytest.raises(TimelineError, match="not readable JSON"):
        load(tmp_path / "digits.json")
    monkeypatch.setattr(gputrace_load, "MAX_TRACE_BYTES", 4096)
    with pytest.raises(TimelineError, match="larger than 4096 bytes"):
        load(REAL)
    (tmp_path / "bomb.json.gz").write_bytes(gzip.compress(b" " * 1_000_000))
    with pytest.raises(TimelineError, match="unzips to more than 4096 bytes"):
        load(tmp_path / "bomb.json.gz")
    (tmp_path / "many.json").write_text("[" + ",".join(["{}"] * 1000) + "]")
    monkeypatch.setattr(gputrace_load, "MAX_JSON_CONTAINERS", 999)
    with pytest.raises(TimelineError, match="more than 999 JSON objects and arrays"):
        load(tmp_path / "many.json")
    (tmp_path / "empty.json").write_text("  \n")
    with pytest.raises(TimelineError, match="empty file"):
        load(tmp_path / "empty.json")
    with pytest.raises(TimelineError, match="not a regular file"):
        load(tmp_path)
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "fifo.json")
        with pytest.raises(TimelineError, match="not a regular file"):  # and no hang waiting for a writer
            load(tmp_path / "fifo.json")


def test_names_are_escaped_when_printed() -> None:
    doc: dict[str, Any] = summarize(load(FIXTURES / "hostile-escapes.json"))
    assert doc["skipped_records"] == 3
    text = "\n".join(format_lines(doc))
    assert "\x1b" not in text and "\u202e" not in text and "\u2028" not in text and "\x07" not in text
    assert "evil\\x1b[2J\\x1b[" in text  # a kernel's label: cut where its brackets nest
    assert "stream s\\x1b[1m" in text
    assert "Memcpy\\x1b[5m" in text and "thread\\x1b]0;pwned\\x07" in text


def test_the_plot_draws_the_real_trace(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from kcoral.profiling.gputrace_plot import plot

    out = plot(REAL, tmp_path / "t.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (tmp_path / "cpu.json").write_text('{"traceEvents": []}')
    with pytest.raises(ValueError, match="no GPU activity to draw"):
        plot(tmp_path / "cpu.json", tmp_path / "u.png")


def test_the_trace_kcoral_timeline_brought_back_from_the_h200() -> None:
    """The recorder's own trace (a job on the H200): CUPTI's sync events are there, the deliberate 20 ms gap
    is the second stream's one gap, the four sgemms run back to back."""
    doc = summarize(load(FIXTURES / "h200-kcoral-timeline.json"))
    streams = {s["stream"]: s for s in doc["streams"]}
    assert streams["17"]["kernels"] == 2 and 20_000 < streams["17"]["largest_gap"]["gap"] < 21_000
    assert streams["13"]["kernels"] == 4 and streams["13"]["gaps"]["max"] < 5
    syncs = {s["name"]: s["count"] for stream in doc["streams"] for s in stream["syncs"]}
    assert syncs == {"Context Sync": 3, "Stream Sync": 1}
    assert doc["counts"]["sync"] == 4 and doc["recorder"]["devices"] == ["NVIDIA H200"]


def test_a_forged_time_is_skipped_not_summed(tmp_path: Path) -> None:
    """A record claiming a 1e308 us kernel or a start at -1e308 us (a hostile trace) is unreadable, not a
    300-digit total: it is skipped and counted like a negative duration."""
    ev = {"cat": "kernel", "name": "k", "ph": "X", "pid": 0, "tid": 7, "args": {"stream": 7, "device": 0}}
    events = [{**ev, "ts": 1, "dur": 1e308}, {**ev, "ts": -1e308, "dur": 5}, {**ev, "ts": 10, "dur": 2}]
    path = tmp_path / "forged.json"
    path.write_text(json.dumps({"traceEvents": events}))
    doc = summarize(load(path))
    assert doc["counts"]["kernel"] == 1 and doc["skipped_records"] == 2, doc
