"""``kcoral ncu`` / ``kcoral iket`` / ``kcoral sanitizer``: argument splitting, local tools, and the flows
end to end against the test server with stand-in tools (the CPU image has neither ncu nor run-iket)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from kcoral.cli.commands.iket_cmd import split_iket_args
from kcoral.cli.commands.ncu_cmd import split_ncu_args
from kcoral.cli.commands.sanitizer_cmd import split_sanitizer_args
from kcoral.cli.main import run
from kcoral.profiling import jobs
from kcoral.protocol.errors import UsageError
from tests.conftest import RunningServer
from tests.profiling.conftest import FIXTURES

#: no timing asserted, nothing done to the engine that another file would see (scripts/test.sh)
pytestmark = pytest.mark.concurrent


def test_split_ncu_args() -> None:
    parsed = split_ncu_args(
        [
            "--set",
            "full",
            "-e",
            "A=1",
            "-c",
            "1",
            "--json",
            "-o=r.ncu-rep",
            "-s",
            "2",
            "--",
            "python",
            "x.py",
            "--",
            "y",
        ]
    )
    assert parsed.ncu == ["--set=full", "--launch-count=1", "--launch-skip=2"]
    assert parsed.command == ["python", "x.py", "--", "y"]
    assert parsed.own == {"-e": ["A=1"], "--json": [], "-o": ["r.ncu-rep"]}
    # typer already took `--` when no ncu option came before it; a flag option leaves the command unmarked
    assert split_ncu_args(["python", "x.py", "--", "y"]).command == ["python", "x.py", "--", "y"]
    assert split_ncu_args(["--nvtx", "python", "x.py"]).command == ["python", "x.py"]
    with pytest.raises(UsageError, match="--export is not allowed"):
        split_ncu_args(["--export", "x", "--", "python"])


def test_split_iket_args() -> None:
    argv, command = split_iket_args(
        ["--clobber", "profile", "--postprocess", "json", "--", "python", "c.py", "--", "z"]
    )
    assert argv == ["--clobber", "profile", "--postprocess", "json"]
    assert command == ["python", "c.py", "--", "z"]
    with pytest.raises(UsageError, match="after a --"):
        split_iket_args(["profile", "python", "c.py"])
    with pytest.raises(UsageError, match="expected"):
        split_iket_args(["python", "c.py"])
    with pytest.raises(UsageError, match="--output-dir is not allowed"):
        split_iket_args(["profile", "--output-dir", "x", "--", "python"])


def test_split_sanitizer_args() -> None:
    parsed = split_sanitizer_args(
        [
            "--tool",
            "racecheck",
            "-e",
            "A=1",
            "--print-limit=3",
            "--json",
            "-o",
            "out",
            "--",
            "python",
            "r.py",
            "--",
            "z",
        ]
    )
    assert parsed.tool == ["--tool=racecheck", "--print-limit=3"]
    assert parsed.command == ["python", "r.py", "--", "z"]
    assert parsed.own == {"-e": ["A=1"], "--json": [], "-o": ["out"]}
    assert split_sanitizer_args(["python", "x.py"]).command == ["python", "x.py"]
    with pytest.raises(UsageError, match="--save is not allowed"):
        split_sanitizer_args(["--save", "x", "--", "python"])


def test_usage_errors_before_anything_is_sent(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KCORAL_REMOTE", "http://127.0.0.1:9")  # nothing listens: must not be reached
    assert run(["ncu", "--send", str(tmp_path), "-o", str(tmp_path / "r"), "--log-file", "x", "--", "python"]) == 2
    assert "--log-file is not allowed" in capfd.readouterr().err
    assert run(["ncu", "--send", str(tmp_path), "--", "python"]) == 2
    assert "-o FILE.ncu-rep" in capfd.readouterr().err
    (tmp_path / "r.ncu-rep").write_bytes(b"old")
    assert run(["ncu", "--send", str(tmp_path), "-o", str(tmp_path / "r"), "--", "python"]) == 2
    assert "exists: pass -f" in capfd.readouterr().err
    assert run(["iket", "--send", str(tmp_path), "--", "--output-dir", "d", "profile", "--", "python"]) == 2
    assert "--output-dir is not allowed" in capfd.readouterr().err
    assert run(["sanitizer", "--send", str(tmp_path), "--error-exitcode", "0", "--", "python"]) == 2
    assert "--error-exitcode is not allowed" in capfd.readouterr().err
    assert run(["sanitizer", "--send", str(tmp_path), "--tool", "racecheck", "--leak-check", "full", "--", "x"]) == 2
    assert "applies to memcheck, not racecheck" in capfd.readouterr().err
    assert run(["sanitizer", "--send", str(tmp_path), "--tool=memcheck"]) == 2
    assert "no command to sanitize" in capfd.readouterr().err


SANITIZER_FIXTURES = FIXTURES.parent.parent / "fixtures" / "sanitizer"


@pytest.mark.parametrize(
    ("name", "code"),
    [("handmade-memcheck.txt", 86), ("handmade-memcheck.xml", 86), ("handmade-clean.txt", 0)],
)
def test_sanitizer_summarize(name: str, code: int, capfd: pytest.CaptureFixture[str]) -> None:
    assert run(["sanitizer", "summarize", str(SANITIZER_FIXTURES / name)]) == code
    out = capfd.readouterr().out
    assert out.startswith("compute-sanitizer: ")
    assert run(["sanitizer", "summarize", "--json", str(SANITIZER_FIXTURES / name)]) == code
    assert json.loads(capfd.readouterr().out)["errors"] == (0 if code == 0 else 3 if name.endswith("xml") else 4)


@pytest.mark.parametrize(
    "name",
    [
        "hostile-truncated.xml",
        "hostile-bomb.xml",
        "hostile-external-entity.xml",
        "hostile-wrong-root.xml",
        "hostile-not-a-report.txt",
        "absent.txt",
    ],
)
def test_sanitizer_summarize_hostile(name: str, capfd: pytest.CaptureFixture[str]) -> None:
    assert run(["sanitizer", "summarize", str(SANITIZER_FIXTURES / name)]) == 2
    captured = capfd.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and "Traceback" not in captured.err


def test_sanitizer_summarize_escapes(capfd: pytest.CaptureFixture[str]) -> None:
    assert run(["sanitizer", "summarize", str(SANITIZER_FIXTURES / "hostile-escapes.txt")]) == 86
    out = capfd.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\\x1b[2K" in out


def test_iket_summarize_and_plot(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    trace = FIXTURES / "trace_interned.json"
    assert run(["iket", "summarize", str(trace), "--marker", "tick"]) == 0
    out = capfd.readouterr().out
    assert "gemm_kernel" in out and "period of tick (marker, 2 CTAs): mean 0.225 us" in out
    assert run(["iket", "summarize", str(trace), "--json", "--kernel", "gemm"]) == 0
    doc = json.loads(capfd.readouterr().out)
    assert doc["launches"][0]["cta_span"]["max"] == 1100
    assert run(["iket", "summarize", str(tmp_path / "missing.json")]) == 2
    assert run(["iket", "summarize", str(trace), "--group-by", "bogus"]) == 2
    pytest.importorskip("matplotlib")
    assert run(["iket", "plot", str(trace), "-o", str(tmp_path / "t.png")]) == 0
    assert (tmp_path / "t.png").read_bytes()[:4] == b"\x89PNG"


def test_ncu_summarize_uses_the_summary_beside_without_ncu(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from kcoral.profiling import ncu_summary

    monkeypatch.setattr(ncu_summary, "import_ncu_report", lambda ncu=None: None)
    monkeypatch.setattr(ncu_summary, "find_ncu", lambda explicit=None: None)
    report = tmp_path / "r.ncu-rep"
    report.write_bytes(b"x")
    assert run(["ncu", "summarize", str(report)]) == 2
    assert "neither the ncu_report module nor an ncu binary" in capfd.readouterr().err
    kernels = ncu_summary.parse_details_csv((FIXTURES / "ncu_details.csv").read_text())
    (tmp_path / "r.ncu-rep.json").write_text(json.dumps({"kernels": kernels, "errors": []}))
    assert run(["ncu", "summarize", str(report)]) == 0
    assert "[0] matmul_kernel" in capfd.readouterr().out


# --- end to end, with stand-in tools -------------------------------------------------------------------------

FAKE_NCU = """#!/bin/sh
echo "fake ncu $*"
echo rep > /job/out/report.ncu-rep
echo other > /job/out/extra.txt
exit 0
"""

FAKE_IKET = """#!/bin/sh
echo "fake run-iket $*"
test "$CUTE_DSL_NO_CACHE" = 1 || exit 9
mkdir -p "$2/sub"
cp trace.json "$2/iket_pid_0x2a.trace.json"
echo pf > "$2/sub/iket_pid_0x2a.pftrace"
"""


@pytest.fixture
def fake_tools(server: RunningServer, monkeypatch: pytest.MonkeyPatch) -> RunningServer:
    """The in-process server believes it can profile, and runs the stand-in tools from the sent directory."""
    caps = {
        "counters_restricted": False,
        "ncu": {"path": "/job/input/fake-ncu", "ok": True, "reason": ""},
        "iket": {"path": "/job/input/fake-run-iket", "ok": True, "reason": ""},
        "sanitizer": {"path": "/job/input/fake-sanitizer", "ok": True, "reason": ""},
    }
    monkeypatch.setattr(jobs.capabilities, "for_server", lambda *a, **k: caps)
    monkeypatch.setattr(jobs.capabilities, "tool_path", lambda settings, kind: caps[kind]["path"])
    monkeypatch.setattr(jobs, "_check_runnable", lambda *a: None)
    monkeypatch.setattr(jobs.capabilities, "profiler_image", lambda settings, kind: settings.image)
    monkeypatch.setenv("KCORAL_REMOTE", server.url)
    monkeypatch.delenv("KCORAL_TOKEN", raising=False)
    return server


def _send_dir(tmp_path: Path, files: dict[str, str]) -> Path:
    send = tmp_path / "send"
    send.mkdir()
    for name, text in files.items():
        (send / name).write_text(text)
        (send / name).chmod(0o755)
    return send


def test_ncu_end_to_end(
    fake_tools: RunningServer, tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    send = _send_dir(tmp_path, {"fake-ncu": FAKE_NCU})
    monkeypatch.chdir(tmp_path)
    code = run(
        ["ncu", "--send", str(send), "-o", "prof/mm", "-k", "regex:gemm", "-c", "1", "--json", "--", "python3", "x.py"]
    )
    doc: dict[str, Any] = json.loads(capfd.readouterr().out)
    assert code == 0, doc
    assert (
        "fake ncu --config-file 0 --export /job/out/report.ncu-rep --kernel-name=regex:gemm --launch-count=1 "
        "python3 x.py" in doc["log"]
    )
    assert Path("prof/mm.ncu-rep").read_text() == "rep\n"
    assert doc["report"] == "prof/mm.ncu-rep" and doc["summary_path"] == "prof/mm.ncu-rep.json"
    # no ncu in the job image: the summary says so instead of failing the job
    assert doc["summary"]["kernels"] == [] and doc["summary"]["errors"]
    assert (Path("kcoral-out") / doc["id"] / "extra.txt").read_text() == "other\n"
    assert not list(Path("prof").glob(".*"))  # the staging directory is gone


FAKE_SANITIZER = """#!/bin/sh
echo "fake compute-sanitizer $*"
for w in "$@"; do
  case "$w" in --log-file=*) log="${w#--log-file=}";; --save=*) xml="${w#--save=}";; esac
done
cp memcheck.txt "$log"
cp memcheck.xml "$xml"
exit 86
"""


def test_sanitizer_end_to_end(fake_tools: RunningServer, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    send = _send_dir(tmp_path, {"fake-sanitizer": FAKE_SANITIZER})
    shutil.copy(SANITIZER_FIXTURES / "handmade-memcheck.txt", send / "memcheck.txt")
    shutil.copy(SANITIZER_FIXTURES / "handmade-memcheck.xml", send / "memcheck.xml")
    out = tmp_path / "out"
    code = run(["sanitizer", "--send", str(send), "--print-limit", "5", "-o", str(out), "--", "python3", "oob.py"])
    captured = capfd.readouterr()
    assert code == 86, captured
    assert (
        "fake compute-sanitizer --tool=memcheck --error-exitcode=86 --log-file=/job/out/sanitizer.txt "
        "--save=/job/out/sanitizer.xml --xml --print-limit=5 python3 oob.py" in captured.out
    )
    assert "compute-sanitizer: 4 errors (3 printed in the report)" in captured.out
    assert "2x  add_kernel: Invalid __global__ read of size 4 bytes at /job/input/oob.py:14" in captured.out
    assert sorted(p.name for p in out.iterdir()) == ["sanitizer.txt", "sanitizer.xml"]


def test_iket_end_to_end(fake_tools: RunningServer, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    send = _send_dir(tmp_path, {"fake-run-iket": FAKE_IKET})
    shutil.copy(FIXTURES / "trace_plain.json", send / "trace.json")
    out = tmp_path / "out"
    code = run(
        [
            "iket",
            "--send",
            str(send),
            "--output-dir",
            str(out),
            "-e",
            "CUTE_DSL_NO_CACHE=0",
            "--",
            "profile",
            "--",
            "python3",
            "capture.py",
        ]
    )
    captured = capfd.readouterr()
    assert code == 0, captured
    assert (
        "fake run-iket --output-dir /job/out/.iket-stage profile --postprocess all -- python3 capture.py"
        in captured.out
    )
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == [
        "iket_pid_0x2a.trace.json",
        "sub/iket_pid_0x2a.pftrace",
    ]
    assert "kcoral iket summarize" in captured.err
