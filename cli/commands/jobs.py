"""``kcoral jobs``: the caller's jobs."""

from __future__ import annotations

from kcoral.cli.commands.common import JsonOption, RemoteOption, TokenOption, connect
from kcoral.cli.output import emit_json, job_json, stdout
from kcoral.cli.render import jobs_table


def jobs(remote: RemoteOption = None, token: TokenOption = None, json: JsonOption = False) -> None:
    """List your jobs on the server."""
    with connect(remote, token) as client:
        views = client.jobs()
    if json:
        emit_json([job_json(v) for v in views])
    elif not views:
        stdout().print("no jobs")
    else:
        stdout().print(jobs_table(views))
