"""The MCP ``timeline`` tool's result (cli.mcp_results.timeline) from a finished job's downloaded trace."""

from __future__ import annotations

import shutil
from pathlib import Path

from kcoral.cli.library import JobResult
from kcoral.cli.mcp_results import timeline
from kcoral.protocol.models import JobState, JobTimes, JobView, TimelineSpec, Verdict

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "timeline"


def done(files: list[Path], out: Path) -> JobResult:
    view = JobView(
        id="j1",
        owner="o",
        state=JobState.finished,
        spec=TimelineSpec(command=["python", "two_streams.py"]),
        verdict=Verdict.ok,
        exit_code=0,
        times=JobTimes(created=0),
    )
    return JobResult(view, "log\n", out, files)


def test_the_result_summarises_the_trace(tmp_path: Path) -> None:
    trace = tmp_path / "timeline.trace.json"
    shutil.copy(FIXTURES / "h200-two-streams.json", trace)
    result = timeline(done([trace], tmp_path))
    assert result.trace == str(trace) and result.summary is not None
    assert result.summary["counts"]["kernel"] == 7 and len(result.summary["streams"]) == 2


def test_a_broken_or_missing_trace_is_said_not_raised(tmp_path: Path) -> None:
    trace = tmp_path / "timeline.trace.json"
    shutil.copy(FIXTURES / "hostile-truncated.json", trace)
    broken = timeline(done([trace], tmp_path))
    assert broken.summary is not None and "not JSON" in broken.summary["error"]
    missing = timeline(done([], tmp_path))
    assert missing.summary is None and missing.trace is None
