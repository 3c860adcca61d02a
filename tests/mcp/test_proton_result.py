"""The MCP ``proton`` tool's result (cli.mcp_results.proton) from a finished job's downloaded trace."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from kcoral.cli.library import JobResult
from kcoral.cli.mcp_results import proton
from kcoral.protocol.models import JobState, JobTimes, JobView, ProtonSpec, Verdict

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "proton"


def done(files: list[Path], out: Path | None) -> JobResult:
    view = JobView(
        id="j1",
        owner="o",
        state=JobState.finished,
        spec=ProtonSpec(argv=["--data=trace", "--mode=default"], command=["python", "capture.py"]),
        verdict=Verdict.ok,
        exit_code=0,
        times=JobTimes(created=0),
    )
    return JobResult(view, "log\n", out, files)


def test_the_result_summarises_the_trace_per_scope(tmp_path: Path) -> None:
    trace, facts = tmp_path / "proton.chrome_trace", tmp_path / "proton.json"
    shutil.copy(FIXTURES / "h200-spin.chrome_trace", trace)
    facts.write_text(json.dumps({"triton": "3.6.0", "sm_clock_khz": 1980000}))
    result = proton(done([trace, facts], tmp_path))
    assert result.trace == str(trace) and result.summary is not None
    assert result.summary["units"] == "cycles" and result.summary["clock_mhz"] == 1980.0
    assert [r["median"] for r in result.summary["launches"][0]["ranges"]] == [20103.5, 50067]


def test_a_broken_or_missing_trace_is_said_not_raised(tmp_path: Path) -> None:
    trace = tmp_path / "proton.chrome_trace"
    shutil.copy(FIXTURES / "hostile-truncated.chrome_trace", trace)
    result = proton(done([trace], tmp_path))
    assert result.summary is not None and "not JSON" in result.summary["error"]
    assert proton(done([], None)).summary is None
