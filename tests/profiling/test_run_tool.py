"""The in-container driver (profiling.run_tool) with stand-in tools."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
