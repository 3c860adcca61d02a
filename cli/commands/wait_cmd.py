"""``kcoral wait ID`` (until a job has finished) and ``kcoral download ID`` (its outputs): the end of
work started with ``--detach``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kcoral.cli import output
from kcoral.cli.commands.common import JobIdArgument, JsonOption, RemoteOption, TokenOption, connect
from kcoral.cli.durations import Duration
from kcoral.cli.output import emit_json, job_json, job_progress, note
from kcoral.cli.render import summary_line
from kcoral.protocol.errors import UsageError
from kcoral.protocol.models import EvalSpec, JobState, Verdict


def wait(
    job_id: JobIdArgument,
    timeout: Annotated[
        float | None, typer.Option("--timeout", parser=Duration, help="give up after this long (90, 90s, 5m, 1h)")
    ] = None,
    remote: RemoteOption = None,
    token: TokenOption = None,
    json: JsonOption = False,
) -> None:
    """Wait until a job has finished; print its status line (--json: the job).

    Exit status: the job's, as `kcoral python` or `kcoral eval` would exit; 75 when --timeout passed
    first (the job goes on)."""
    with connect(remote, token) as client:
        job_id = client.resolve(job_id)
        view = client.wait(job_id, timeout, on_change=None if json else job_progress("job {id}"))
        failure = None
        if isinstance(view.spec, EvalSpec) and view.state == JobState.finished and view.verdict != Verdict.ok:
            # as kcoral eval says it (its report is read only in this case)
            from kcoral.cli.commands.eval_cmd import first_failure
            from kcoral.cli.evaldocs import fetch
            from kcoral.tasks.documents import EvalReport

            failure = first_failure(view, fetch(EvalReport, client, view))
    if json:
        emit_json({**job_json(view), **({"failure": failure} if failure else {})})
    else:
        if failure:
            note(f"kcoral: evaluation failed: {failure}")
        note(summary_line(view))
    raise typer.Exit(output.exit_code_for_job(view))


def download(
    job_id: JobIdArgument,
    output_dir: Annotated[
        Path | None, typer.Option("--output-dir", "-o", help="where the files go [default: ./kcoral-out/JOB_ID]")
    ] = None,
    remote: RemoteOption = None,
    token: TokenOption = None,
    json: JsonOption = False,
) -> None:
    """Download a finished job's outputs, each checked against its sha256."""
    with connect(remote, token) as client:
        job_id = client.resolve(job_id)
        view = client.status(job_id)
        if view.state != JobState.finished:
            raise UsageError(f"job {job_id} is {view.state}: kcoral wait {job_id} first")
        dest = output_dir or Path("kcoral-out") / view.id
        files = client.download_outputs(view, dest)
    if json:
        emit_json({"job_id": view.id, "output_dir": str(dest), "files": [str(f) for f in files]})
    else:
        note(f"kcoral: {len(files)} output file(s) in {dest}" if files else f"kcoral: job {view.id} has no outputs")
