"""``kcoral python [OPTIONS] [--] SCRIPT [ARGS...]`` (or ``-c CODE`` / ``-m MODULE``): run it remotely.

Everything after ``--`` or after the first word that is not one of kcoral's options goes to the program
untouched: ``kcoral python --send d -- bench.py --iters 10``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated

import typer

from kcoral.cli.argv import RAW_ARGV, build_argv, misplaced_options
from kcoral.cli.commands.common import (
    EnvOption,
    GpuTypeOption,
    JsonOption,
    RemoteOption,
    TimeoutOption,
    TokenOption,
    connect,
    job_spec,
)
from kcoral.cli.output import note
from kcoral.cli.runflow import PythonRun, RunOptions
from kcoral.protocol.errors import UsageError
from kcoral.protocol.models import PythonSpec

OPTIONS_METAVAR = "[OPTIONS] [--] SCRIPT|-c CODE|-m MODULE [ARGS]..."


def build_spec(
    args: list[str],
    code: str | None,
    module: str | None,
    env_options: list[str],
    timeout: float | None,
    gpus: int,
    gpu_type: str = "any",
) -> PythonSpec:
    """The spec for the command line's pieces (UsageError for anything the spec refuses)."""
    fields = {"kind": "python", "argv": build_argv(args, code, module), "gpus": gpus, "gpu_type": gpu_type}
    spec = job_spec(fields, env_options, timeout)
    assert isinstance(spec, PythonSpec)
    return spec


def python(
    ctx: typer.Context,
    send: Annotated[
        Path | None,
        typer.Option(
            "--send", "-s", help="directory to send (the job's working directory) [default: ., nothing for -c]"
        ),
    ] = None,
    env: EnvOption = None,
    code: Annotated[str | None, typer.Option("-c", help="program passed in as a string")] = None,
    module: Annotated[str | None, typer.Option("-m", help="run a library module as a script")] = None,
    timeout: TimeoutOption = None,
    gpus: Annotated[int, typer.Option("--gpus", min=0, help="GPUs to lease")] = 1,
    gpu_type: GpuTypeOption = "any",
    output_dir: Annotated[
        Path | None,
        typer.Option("--output-dir", "-o", help="where outputs go [default: ./kcoral-out/JOB_ID]"),
    ] = None,
    detach: Annotated[bool, typer.Option("--detach", "-d", help="exit after the upload; print the job id")] = False,
    json: JsonOption = False,
    remote: RemoteOption = None,
    token: TokenOption = None,
) -> None:
    """Run SCRIPT [ARGS...] (or -c CODE / -m MODULE) with python on the server; stream its output back.

    Everything after -- (or after SCRIPT) goes to the program untouched.

    Exit status: the job's own, or 124 timeout, 137 memory limit, 123 output limit, 125 infrastructure
    error, 130 cancelled; 2 bad input, 69 server unreachable, 70 server error, 77 unauthorized.
    """
    flag = "-c" if code is not None else "-m" if module is not None else None
    wrong = misplaced_options(RAW_ARGV.get(), ctx.args, flag) if flag else []
    if wrong:
        raise UsageError(
            f"unknown option {wrong[0]!r}",
            hint=f"kcoral python's options come first (kcoral python --help); the program's go after {flag} ...",
        )
    spec = build_spec(list(ctx.args), code, module, env or [], timeout, gpus, gpu_type)
    if send is None and code is not None:
        with tempfile.TemporaryDirectory(prefix="kcoral-nothing-") as nothing:  # -c CODE: nothing to send
            _run(spec, Path(nothing), output_dir, json, detach, remote, token)
    if send is None:
        send = Path(".")
    if not send.is_dir():
        raise UsageError(f"--send {send}: not a directory")
    script = spec.argv[0]
    if not script.startswith("-") and not Path(script).is_absolute() and not (send / script).exists():
        note(f"kcoral: warning: {script} is not in {send}")
    _run(spec, send, output_dir, json, detach, remote, token)


def _run(
    spec: PythonSpec,
    send: Path,
    output_dir: Path | None,
    json: bool,
    detach: bool,
    remote: str | None,
    token: str | None,
) -> None:
    options = RunOptions(spec=spec, send_dir=send, output_dir=output_dir, json=json, detach=detach)
    with connect(remote, token) as client:
        code = PythonRun(client, options).run()
    raise typer.Exit(code)
