"""``kcoral cancel ID``."""

from __future__ import annotations

from kcoral.cli.commands.common import JobIdArgument, JsonOption, RemoteOption, TokenOption, connect
from kcoral.cli.output import emit_json, job_json, stdout
from kcoral.cli.render import state_text


def cancel(
    job_id: JobIdArgument, remote: RemoteOption = None, token: TokenOption = None, json: JsonOption = False
) -> None:
    """Cancel a job (queued or running); a finished job stays as it was."""
    with connect(remote, token) as client:
        job_id = client.resolve(job_id)
        view = client.cancel(job_id)
    if json:
        emit_json(job_json(view))
    else:
        stdout().print(f"job {view.id}: {state_text(view)}", markup=False)
