"""The MCP ``sanitizer`` tool's result (cli.mcp_results.sanitizer) from a finished job's downloaded reports."""

from __future__ import annotations

import shutil
from pathlib import Path

from kcoral.cli.library import JobResult
from kcoral.cli.mcp_results import sanitizer
from kcoral.protocol.models import JobState, JobTimes, JobView, SanitizerSpec, Verdict

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sanitizer"


def done(files: list[Path], out: Path) -> JobResult:
    view = JobView(
        id="j1",
        owner="o",
        state=JobState.finished,
        spec=SanitizerSpec(argv=["--tool=memcheck"], command=["python", "oob.py"]),
        verdict=Verdict.exit,
        exit_code=86,
        times=JobTimes(created=0),
    )
    return JobResult(view, "log\n", out, files)


def test_the_result_groups_the_reports_errors(tmp_path: Path) -> None:
    text, xml = tmp_path / "sanitizer.txt", tmp_path / "sanitizer.xml"
    shutil.copy(FIXTURES / "handmade-memcheck.txt", text)
    shutil.copy(FIXTURES / "handmade-memcheck.xml", xml)
    result = sanitizer(done([text, xml], tmp_path))
    assert result.errors == 4 and result.job_exit_code == 86 and result.reports == [str(text), str(xml)]
    assert result.summary is not None and result.summary["groups"][0]["kernel"] == "add_kernel"


def test_a_broken_report_is_said_not_raised(tmp_path: Path) -> None:
    xml = tmp_path / "sanitizer.xml"
    shutil.copy(FIXTURES / "hostile-bomb.xml", xml)
    result = sanitizer(done([xml], tmp_path))
    assert result.errors is None and result.summary is not None and "DOCTYPE" in result.summary["error"]
    missing = sanitizer(done([], tmp_path))
    assert missing.summary is not None and "no compute-sanitizer report came back" in missing.summary["error"]
