"""``kcoral status ID``: one job's state, verdict, times and outputs."""

from __future__ import annotations

from kcoral.cli.commands.common import JobIdArgument, JsonOption, RemoteOption, TokenOption, connect
from kcoral.cli.output import emit_json, job_json, stdout
from kcoral.cli.render import job_details


def status(
    job_id: JobIdArgument, remote: RemoteOption = None, token: TokenOption = None, json: JsonOption = False
) -> None:
    """Show a job (exit status 0 whatever its verdict)."""
    with connect(remote, token) as client:
        job_id = client.resolve(job_id)
        view = client.status(job_id)
    if json:
        emit_json(job_json(view))
    else:
        stdout().print(job_details(view))
