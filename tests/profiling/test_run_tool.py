"""The in-container driver (profiling.run_tool) with stand-in tools."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kcoral.profiling import run_tool

REPO = Path(__file__).resolve().parents[2]


def script(path: Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def test_iket_files_move_up_and_exit_code_is_kept(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    stage = out / ".iket-stage"
    tool = script(
        tmp_path / "run-iket",
        f"mkdir -p {stage}/sub && echo t > {stage}/iket_pid_0x1.trace.json "
        f"&& echo p > {stage}/sub/a.pftrace && exit 3\n",
    )
    assert run_tool.main(["iket", "--stage", str(stage), "--out", str(out), "--", tool]) == 3
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == [
        "iket_pid_0x1.trace.json",
        "sub/a.pftrace",
    ]
    assert not stage.exists()


def test_ncu_summary_is_written_even_without_a_report(tmp_path: Path) -> None:
    tool = script(tmp_path / "ncu", "echo profiling; exit 0\n")
    summary = tmp_path / "r.json"
    code = run_tool.main(["ncu", "--report", str(tmp_path / "r.ncu-rep"), "--summary", str(summary), "--", tool])
    assert code == 0
    assert "no report" in json.loads(summary.read_text())["errors"][0]


def test_signal_and_missing_tool(tmp_path: Path) -> None:
    tool = script(tmp_path / "t", "kill -9 $$\n")
    assert run_tool.main(["iket", "--stage", str(tmp_path / "s"), "--out", str(tmp_path), "--", tool]) == 137
    assert (
        run_tool.main(["iket", "--stage", str(tmp_path / "s"), "--out", str(tmp_path), "--", str(tmp_path / "absent")])
        == 127
    )
    assert run_tool.main(["ncu"]) == 2


def test_runs_as_a_module_with_only_the_profiling_package(tmp_path: Path) -> None:
    """Inside the job only /kcoral/profiling exists: the driver must not import runner or cli."""
    mount = tmp_path / "kcoral"
    mount.mkdir()
    (mount / "profiling").symlink_to(REPO / "profiling")
    tool = script(tmp_path / "ncu", "exit 5\n")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "kcoral.profiling.run_tool",
            "ncu",
            "--report",
            str(tmp_path / "r"),
            "--summary",
            str(tmp_path / "s.json"),
            "--",
            tool,
        ],
        env={"PYTHONPATH": str(mount), "HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 5, proc.stderr
    assert (tmp_path / "home").is_dir() and (tmp_path / "s.json").is_file()


FAKE_SANITIZER = """#!/bin/sh
# a stand-in compute-sanitizer: $LOG and $XML from its --log-file= and --save= words, then the "application"
for w in "$@"; do
  case "$w" in --log-file=*) log="${w#--log-file=}";; --save=*) xml="${w#--save=}";; esac
done
printf '========= COMPUTE-SANITIZER\\n========= ERROR SUMMARY: %s errors\\n' "$ERRORS" > "$log"
echo '<ComputeSanitizerOutput/>' > "$xml"
exit "$CODE"
"""


@pytest.mark.parametrize(("errors", "code", "expected"), [("0", "0", 0), ("2", "0", 86), ("2", "1", 86), ("0", "3", 3)])
def test_sanitizer_exits_86_when_its_reports_count_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str], errors: str, code: str,
    expected: int,
) -> None:  # fmt: skip
    tool = script(tmp_path / "compute-sanitizer", FAKE_SANITIZER.removeprefix("#!/bin/sh\n"))
    monkeypatch.setenv("ERRORS", errors)
    monkeypatch.setenv("CODE", code)
    text, xml = tmp_path / "sanitizer.txt", tmp_path / "sanitizer.xml"
    argv = [tool, "--tool=memcheck", f"--log-file={text}", f"--save={xml}", "--xml", "python", "x.py"]
    assert run_tool.main(["sanitizer", "--text", str(text), "--xml", str(xml), "--", *argv]) == expected
    err = capfd.readouterr().err
    assert f"ERROR SUMMARY: {errors} errors" in err  # the text report is echoed into the job's log
    assert ("the job exits with 86" in err) == (expected == 86)


def test_sanitizer_without_reports_keeps_the_tools_code(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    tool = script(tmp_path / "compute-sanitizer", "exit 7\n")
    text, xml = tmp_path / "t.txt", tmp_path / "x.xml"
    assert run_tool.main(["sanitizer", "--text", str(text), "--xml", str(xml), "--", tool]) == 7
    assert "wrote no report (exit code 7)" in capfd.readouterr().err
    (tmp_path / "t.txt").write_text("no report at all\n")
    assert run_tool.main(["sanitizer", "--text", str(text), "--xml", str(xml), "--", tool]) == 7
    assert "cannot read t.txt: not a compute-sanitizer report" in capfd.readouterr().err


def test_the_sanitizer_driver_runs_with_only_the_profiling_package(tmp_path: Path) -> None:
    mount = tmp_path / "kcoral"
    mount.mkdir()
    (mount / "profiling").symlink_to(REPO / "profiling")
    tool = script(tmp_path / "compute-sanitizer", FAKE_SANITIZER.removeprefix("#!/bin/sh\n"))
    text, xml = tmp_path / "sanitizer.txt", tmp_path / "sanitizer.xml"
    proc = subprocess.run(
        [sys.executable, "-m", "kcoral.profiling.run_tool", "sanitizer", "--text", str(text), "--xml", str(xml),
         "--", tool, f"--log-file={text}", f"--save={xml}"],
        env={"PYTHONPATH": str(mount), "HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin", "ERRORS": "1",
             "CODE": "0"},
        cwd=tmp_path, capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 86, proc.stderr
