"""``kcoral logs ID [--follow] [--stream S]``: the job's log, its stdout on stdout and its stderr on stderr."""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import Annotated

import typer

from kcoral.cli.commands.common import JobIdArgument, RemoteOption, TokenOption, connect
from kcoral.cli.logsink import LogSink
from kcoral.protocol.framing import STDERR, STDOUT


class Stream(StrEnum):
    both = "both"
    stdout = "stdout"
    stderr = "stderr"


def logs(
    job_id: JobIdArgument,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="keep streaming until the job ends")] = False,
    offset: Annotated[int, typer.Option("--offset", min=0, help="start at this byte of the log")] = 0,
    stream: Annotated[
        Stream,
        typer.Option(
            "--stream",
            help="both: the job's stdout on stdout, its stderr on stderr; stdout or stderr: only that one, on stdout",
        ),
    ] = Stream.both,
    remote: RemoteOption = None,
    token: TokenOption = None,
) -> None:
    """Print a job's log (Ctrl-C stops following; the job goes on)."""
    only = {Stream.stdout: STDOUT, Stream.stderr: STDERR}.get(stream)
    sink = LogSink(sys.stdout.buffer, errors=sys.stderr.buffer if only is None else None)
    with connect(remote, token) as client:
        job_id = client.resolve(job_id)
        for piece in client.follow_log(job_id, offset, follow=follow):
            if only is None:
                sink.write(piece.data, piece.stream)
            elif piece.stream == only:
                sink.write(piece.data)
            if sink.broken_pipe:
                break
