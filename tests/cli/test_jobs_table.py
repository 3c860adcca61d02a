"""`kcoral jobs`' table: newest first, as its help says (the server lists them so; the table keeps it)."""

from __future__ import annotations

import io

from rich.console import Console

from kcoral.cli.render import jobs_table
from kcoral.protocol.models import JobState, JobTimes, JobView, PythonSpec


def view(job: str, created: float) -> JobView:
    return JobView(
        id=job, owner="o", state=JobState.queued, spec=PythonSpec(argv=["m.py"]), times=JobTimes(created=created)
    )


def test_the_newest_job_is_the_first_row() -> None:
    out = io.StringIO()
    Console(file=out, width=200).print(jobs_table([view("j-old", 100.0), view("j-new", 300.0), view("j-mid", 200.0)]))
    rows = [line.split()[0] for line in out.getvalue().splitlines()[1:] if line.strip()]
    assert rows == ["j-new", "j-mid", "j-old"]
