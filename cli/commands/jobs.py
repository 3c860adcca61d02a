"""``kcoral jobs``: the caller's jobs, newest first."""

from __future__ import annotations

from typing import Annotated

import typer

from kcoral.cli.commands.common import JsonOption, RemoteOption, TokenOption, connect
from kcoral.cli.output import emit_json, job_json, note, stdout
from kcoral.cli.render import jobs_table


def jobs(
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=500, help="show the newest N")] = 50,
    every: Annotated[bool, typer.Option("--all", help="show every job (fetched 500 at a time)")] = False,
    remote: RemoteOption = None,
    token: TokenOption = None,
    json: JsonOption = False,
) -> None:
    """List your jobs on the server, newest first (the newest 50 unless --limit or --all)."""
    with connect(remote, token) as client:
        if every:
            views, more = list(client.all_jobs()), False
        else:
            views = client.jobs(min(limit + 1, 500))
            more = len(views) > limit or (len(views) == limit and bool(client.jobs(1, views[-1].id)))
            views = views[:limit]
    if json:
        emit_json([job_json(v) for v in views])
    elif not views:
        stdout().print("no jobs")
    else:
        stdout().print(jobs_table(views))
    if more:
        note(f"kcoral: the newest {limit} jobs are shown; --limit N or --all shows more")
