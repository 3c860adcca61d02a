"""``kcoral logs ID [--follow]``: the job's combined stdout+stderr, raw, on stdout."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from kcoral.cli.commands.common import JobIdArgument, RemoteOption, TokenOption, connect
from kcoral.cli.logsink import LogSink


def logs(
    job_id: JobIdArgument,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="keep streaming until the job ends")] = False,
    offset: Annotated[int, typer.Option("--offset", min=0, help="start at this byte of the log")] = 0,
    remote: RemoteOption = None,
    token: TokenOption = None,
) -> None:
    """Print a job's log (Ctrl-C stops following; the job goes on)."""
    sink = LogSink(sys.stdout.buffer)
    with connect(remote, token) as client:
        job_id = client.resolve(job_id)
        for chunk in client.follow_log(job_id, offset, follow=follow):
            sink.write(chunk)
            if sink.broken_pipe:
                break
