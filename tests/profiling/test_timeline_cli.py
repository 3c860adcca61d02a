"""``kcoral timeline``: its command line (checked before anything is sent), ``summarize`` and ``plot`` on the
H200's trace and on hostile files, and a real job end to end: the CPU job image's torch records a CPU-only
trace around a script that exits with its own code, and the summary says there was no GPU activity."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kcoral.cli.commands.timeline_cmd import split_timeline_args
from kcoral.cli.main import run
from kcoral.profiling import jobs
from kcoral.protocol.errors import UsageError
from tests.conftest import RunningServer

pytestmark = pytest.mark.concurrent

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "timeline"
REAL = FIXTURES / "h200-two-streams.json"


def test_split_timeline_args() -> None:
    parsed = split_timeline_args(["--with-stack", "-o", "out", "--timeout", "60", "--", "python", "b.py", "-x"])
    assert parsed.tool == ["--with-stack"] and parsed.command == ["python", "b.py", "-x"]
    assert parsed.last("-o") == "out" and parsed.last("--timeout") == "60"
    assert split_timeline_args(["python", "-m", "m"]).command == ["python", "-m", "m"]
    with pytest.raises(UsageError, match="--nsys is not allowed"):
        split_timeline_args(["--nsys", "--", "python", "b.py"])


def test_usage_errors_before_anything_is_sent(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KCORAL_REMOTE", "http://127.0.0.1:9")  # nothing listens: must not be reached
    for words, why in [
        (["--", "./run.sh"], "records Python programs only"),
        (["--nsys", "--", "python", "b.py"], "Nsight Systems is not available"),
        (["--", "python", "-X", "dev", "b.py"], "python options such as '-X'"),
        (["--record-shapes"], "no command to record"),
    ]:
        assert run(["timeline", "--send", str(tmp_path), *words]) == 2, words
        err = capfd.readouterr().err
        assert why in err and err.count("\n") == 1, err


def test_summarize_the_h200_trace(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    assert run(["timeline", "summarize", str(REAL), "--top", "2"]) == 0
    out = capfd.readouterr().out
    assert out.startswith("timeline: 7 kernels, 1 copy, 1 memset, 0 syncs on 2 streams over 233.653 ms")
    assert "stream 17 (device 0, launched by thread 792 (python3)): 3 kernels" in out
    assert run(["timeline", "summarize", "--json", str(REAL)]) == 0
    doc = json.loads(capfd.readouterr().out)
    assert [s["gaps"]["count"] for s in doc["streams"]] == [3, 2] and doc["units"] == "us"
    pytest.importorskip("matplotlib")
    assert run(["timeline", "plot", str(REAL), "-o", str(tmp_path / "t.png")]) == 0
    assert (tmp_path / "t.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(
    "name", ["hostile-truncated.json", "hostile-deep.json.gz", "hostile-not-a-trace.json", "absent.json"]
)
def test_summarize_hostile(name: str, capfd: pytest.CaptureFixture[str]) -> None:
    assert run(["timeline", "summarize", str(FIXTURES / name)]) == 2
    captured = capfd.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and "Traceback" not in captured.err


def test_summarize_escapes(capfd: pytest.CaptureFixture[str]) -> None:
    assert run(["timeline", "summarize", str(FIXTURES / "hostile-escapes.json")]) == 0
    out = capfd.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out and "\\x1b]0;pwned\\x07" in out


# --- end to end: a real job in the CPU image, its torch recording ------------------------------------------------

PROGRAM = """import sys
import torch

x = torch.randn(64, 64)
print("product", float((x @ x).abs().sum()) > 0, sys.argv[1:])
sys.exit(3)
"""


@pytest.fixture
def profiling_server(server: RunningServer, monkeypatch: pytest.MonkeyPatch) -> RunningServer:
    """The in-process server believes it can record timelines (the CPU image has no GPU, its torch no CUDA)."""
    caps: dict[str, Any] = {"timeline": {"path": "python3", "ok": True, "reason": ""}}
    monkeypatch.setattr(jobs.capabilities, "for_server", lambda *a, **k: caps)
    monkeypatch.setattr(jobs, "_check_runnable", lambda *a: None)
    monkeypatch.setattr(jobs.capabilities, "profiler_image", lambda settings, kind: settings.image)
    monkeypatch.setenv("KCORAL_REMOTE", server.url)
    monkeypatch.delenv("KCORAL_TOKEN", raising=False)
    return server


def test_timeline_end_to_end(
    profiling_server: RunningServer, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    send = tmp_path / "send"
    send.mkdir()
    (send / "prog.py").write_text(PROGRAM)
    out = tmp_path / "out"
    code = run(["timeline", "--send", str(send), "--record-shapes", "-o", str(out), "--", "python", "prog.py", "a"])
    captured = capfd.readouterr()
    assert code == 3, captured  # the program's own exit code
    assert "product True ['a']" in captured.out
    assert "only CPU activity is recorded" in captured.err  # the recorder's notes, on the job's stderr
    assert "kcoral timeline: trace written: timeline.trace.json" in captured.err
    assert "timeline: no GPU activity in" in captured.out
    trace = json.loads((out / "timeline.trace.json").read_text())
    assert any(e.get("name") == "aten::mm" and e.get("args", {}).get("Input Dims") for e in trace["traceEvents"])
    assert "kcoral timeline summarize" in captured.err
