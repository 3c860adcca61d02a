"""Options every command shares (server, token, --json) and the client they make."""

from __future__ import annotations

from typing import Annotated

import typer

from cli.client import KcoralClient
from cli.errors import UsageError

RemoteOption = Annotated[
    str | None,
    typer.Option("--remote", "-r", envvar="KCORAL_REMOTE", help="server URL, e.g. http://127.0.0.1:8901"),
]
TokenOption = Annotated[
    str | None,
    typer.Option("--token", envvar="KCORAL_TOKEN", help="bearer token for the server", show_default=False),
]
JsonOption = Annotated[bool, typer.Option("--json", help="print one JSON document on stdout")]
JobIdArgument = Annotated[str, typer.Argument(help="the job id", show_default=False)]
EnvOption = Annotated[
    list[str] | None,
    typer.Option("--env", "-e", help="NAME=VALUE, or NAME to copy the local value; repeatable"),
]
TimeoutOption = Annotated[float | None, typer.Option("--timeout", help="job wall-clock limit, seconds")]
ProfilerGpusOption = Annotated[int, typer.Option("--gpus", min=1, help="GPUs to lease")]


def connect(remote: str | None, token: str | None, timeout: float = 30.0) -> KcoralClient:
    """The client for ``--remote``/``$KCORAL_REMOTE``; a clear UsageError when there is none."""
    if not remote:
        raise UsageError("no server given: pass --remote URL or set KCORAL_REMOTE")
    return KcoralClient(remote, token or None, timeout)
