"""The ``kcoral`` command: the typer app, and THE one place where errors become messages + exit codes.

``serve`` (runner.serve_command) and ``images`` (images.cli) belong to the server side (the ``server``
extra); on a client-only install they say so, and the client works without the server's packages.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable, Sequence
from typing import Annotated

import typer

from kcoral.cli.argv import RAW_ARGV
from kcoral.cli.commands.cancel import cancel
from kcoral.cli.commands.common import PASSTHROUGH_CONTEXT
from kcoral.cli.commands.eval_cmd import evaluate
from kcoral.cli.commands.gpus import gpus
from kcoral.cli.commands.iket_cmd import OPTIONS_METAVAR as IKET_METAVAR
from kcoral.cli.commands.iket_cmd import iket
from kcoral.cli.commands.jobs import jobs
from kcoral.cli.commands.logs import logs
from kcoral.cli.commands.ncu_cmd import OPTIONS_METAVAR as NCU_METAVAR
from kcoral.cli.commands.ncu_cmd import ncu
from kcoral.cli.commands.python_cmd import OPTIONS_METAVAR, python
from kcoral.cli.commands.rerun_cmd import rerun
from kcoral.cli.commands.show_cmd import show
from kcoral.cli.commands.status import status
from kcoral.cli.commands.tasks_cmd import init, tasks_app
from kcoral.cli.commands.wait_cmd import download, wait
from kcoral.cli.errors import KcoralError, UsageError
from kcoral.cli.output import (
    EXIT_INTERRUPTED,
    EXIT_SERVER_ERROR,
    EXIT_USAGE,
    JSON_EMITTED,
    emit_json,
    error_document,
    exit_code_for_error,
    print_error,
)

__all__ = ["app", "main", "register_optional_commands", "run"]

VERSION = "0.1.0"

app = typer.Typer(
    name="kcoral",
    help="Run Python on a remote kcoral GPU server: send a directory and a script, stream the output back.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        print(f"kcoral {VERSION}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="print the version")
    ] = False,
) -> None:
    """Run Python on a remote kcoral GPU server: send a directory and a script, stream the output back.

    The server comes from --remote or $KCORAL_REMOTE, the token from --token or $KCORAL_TOKEN.
    """


app.command("python", context_settings=PASSTHROUGH_CONTEXT, options_metavar=OPTIONS_METAVAR)(python)
app.command("jobs")(jobs)
app.command("status")(status)
app.command("logs")(logs)
app.command("cancel")(cancel)
app.command("gpus")(gpus)
app.command("ncu", context_settings=PASSTHROUGH_CONTEXT, options_metavar=NCU_METAVAR)(ncu)
app.command("iket", context_settings=PASSTHROUGH_CONTEXT, options_metavar=IKET_METAVAR)(iket)
app.command("eval")(evaluate)
app.add_typer(tasks_app, name="tasks")
app.command("init")(init)
app.command("show")(show)
app.command("rerun")(rerun)
app.command("wait")(wait)
app.command("download")(download)

CORE_COMMANDS = frozenset(
    {
        "python",
        "jobs",
        "status",
        "logs",
        "cancel",
        "gpus",
        "ncu",
        "iket",
        "eval",
        "tasks",
        "init",
        "show",
        "rerun",
        "wait",
        "download",
    }
)
_optional_registered = False


def _debug() -> bool:
    return bool(os.environ.get("KCORAL_DEBUG"))


#: what ``kcoral serve`` and ``kcoral images`` import beyond the client (the ``server`` extra)
SERVER_MODULES = ("fastapi", "uvicorn", "docker")


def register_optional_commands(target: typer.Typer = app) -> None:
    """Add ``serve`` and ``images`` to ``target`` (once). On a client-only install they are there too,
    and say which packages are missing and how to add them."""
    global _optional_registered
    if _optional_registered:
        return
    _optional_registered = True
    missing = [m for m in SERVER_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        for name in ("serve", "images"):
            target.command(
                name,
                context_settings=PASSTHROUGH_CONTEXT,
                add_help_option=False,
                help="(needs the server: pip install 'kcoral[server]')",
            )(_server_missing(name, missing))
        return
    from kcoral.images.cli import images_app
    from kcoral.runner.serve_command import serve

    target.command("serve")(serve)
    target.add_typer(images_app, name="images")


def _server_missing(name: str, missing: list[str]) -> Callable[[typer.Context], None]:
    def command(ctx: typer.Context) -> None:
        raise UsageError(
            f"`kcoral {name}` runs the server, which is not installed here "
            f"(missing: {', '.join(missing)}): pip install 'kcoral[server]'"
        )

    return command


def _is_parse_error(err: Exception) -> bool:
    """A command-line parsing error from typer (which vendors click in recent versions) or click."""
    bases = [getattr(typer, "TyperException", None)]
    try:
        import click

        bases.append(click.ClickException)
    except ImportError:
        pass
    return isinstance(err, tuple(b for b in bases if b is not None)) and callable(getattr(err, "show", None))


def run(argv: Sequence[str] | None = None) -> int:
    """Run kcoral with ``argv`` (default: sys.argv[1:]) and return the exit code; never a traceback."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in CORE_COMMANDS:  # importing the server side costs time: only when needed
        register_optional_commands()
    RAW_ARGV.set(args)
    JSON_EMITTED.set(False)
    wants_json = "--json" in args[: args.index("--")] if "--" in args else "--json" in args

    def failed(code: int, kind: str, message: str, hint: str = "") -> int:
        if wants_json and not JSON_EMITTED.get():  # an agent reading stdout gets a document, always
            emit_json(error_document(message, code, kind, hint))
        return code

    try:
        rv = app(args=args, prog_name="kcoral", standalone_mode=False)
    except KcoralError as err:
        print_error(err)
        return failed(exit_code_for_error(err), type(err).__name__, err.message, err.hint)
    except (typer.Abort, KeyboardInterrupt):
        return failed(EXIT_INTERRUPTED, "Interrupted", "interrupted")
    except BrokenPipeError:
        return 0
    except Exception as err:
        if _is_parse_error(err):  # bad option, missing argument...: click's own message
            err.show()  # type: ignore[attr-defined]
            message = err.format_message() if hasattr(err, "format_message") else str(err)
            return failed(EXIT_USAGE, "UsageError", message)
        if _debug():
            raise
        print_error(f"internal error: {type(err).__name__}: {err} (set KCORAL_DEBUG=1 for a traceback)")
        return failed(EXIT_SERVER_ERROR, "InternalError", f"{type(err).__name__}: {err}")
    return rv if isinstance(rv, int) else 0


def _quiet_broken_stdout() -> None:
    """After a closed pipe on stdout, keep the interpreter from complaining at exit."""
    try:
        sys.stdout.flush()
    except (BrokenPipeError, ValueError, OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def main() -> None:
    """Console-script entry point (``kcoral = "kcoral.cli.main:main"``)."""
    code = run()
    _quiet_broken_stdout()
    sys.exit(code)


if __name__ == "__main__":
    main()
