"""Options every command shares (server, token, --json) and the client they make."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kcoral.cli.durations import Duration
from kcoral.protocol.errors import UsageError

if TYPE_CHECKING:  # imported where used: `kcoral --help` and every command's start-up need neither
    from kcoral.cli.client import KcoralClient
    from kcoral.protocol.models import SpecBase

RemoteOption = Annotated[
    str | None,
    typer.Option("--remote", "-r", envvar="KCORAL_REMOTE", help="server URL, e.g. http://127.0.0.1:8901"),
]
TokenOption = Annotated[
    str | None,
    typer.Option("--token", envvar="KCORAL_TOKEN", help="bearer token for the server", show_default=False),
]
JsonOption = Annotated[bool, typer.Option("--json", help="print one JSON document on stdout")]
JobIdArgument = Annotated[
    str,
    typer.Argument(
        help="the job id, or an unambiguous start of it or of its last part", show_default=False, metavar="ID"
    ),
]
EnvOption = Annotated[
    list[str] | None,
    typer.Option("--env", "-e", help="NAME=VALUE, or NAME to copy the local value; repeatable"),
]
TimeoutOption = Annotated[
    float | None, typer.Option("--timeout", parser=Duration, help="job wall-clock limit: 600, 90s, 10m, 1h")
]
GpuTypeOption = Annotated[
    str, typer.Option("--gpu-type", help="the GPU type to lease, e.g. H200 (a cluster routes by it), or any")
]
ProfilerGpusOption = Annotated[int, typer.Option("--gpus", min=1, help="GPUs to lease")]
#: no short form: a tool's own options pass through these commands (ncu's -s is its --launch-skip)
SendOption = Annotated[Path, typer.Option("--send", help="directory to send (the job's working directory)")]
OutputDirOption = Annotated[
    Path | None, typer.Option("--output-dir", "-o", help="where the job's files go [default: ./kcoral-out/JOB_ID]")
]
#: typer context of the commands that pass the rest of their command line on (python, ncu, iket)
PASSTHROUGH_CONTEXT = {"allow_extra_args": True, "ignore_unknown_options": True, "allow_interspersed_args": False}


def job_spec(fields: dict[str, object], env_options: list[str] | None, timeout: float | None) -> SpecBase:
    """A JobSpec from a command's pieces, with -e options resolved; UsageError for what the spec refuses."""
    from kcoral.protocol.models import parse_spec
    from kcoral.protocol.typeddata import DataError

    env: dict[str, str] = {}
    if env_options:  # the names' rules (kcoral.protocol.jobenv) are imported only by a command that sets some
        from kcoral.cli.envvars import parse_env_options

        env = parse_env_options(env_options, os.environ)
    if env_options is not None:  # (a kind without an environment of the client's passes None)
        fields = {**fields, "env": env}
    if timeout is not None:
        fields["timeout_s"] = timeout
    try:
        return parse_spec(fields)
    except DataError as exc:
        raise UsageError(f"bad job spec: {exc}") from None


def connect(remote: str | None, token: str | None, timeout: float = 30.0) -> KcoralClient:
    """The client for ``--remote``/``$KCORAL_REMOTE``; a clear UsageError when there is none."""
    from kcoral.cli.client import KcoralClient

    if not remote:
        raise UsageError("no server given: pass --remote URL or set KCORAL_REMOTE")
    return KcoralClient(remote, token or None, timeout)
