"""The ``kcoral`` command: the typer app, and THE one place where errors become messages + exit codes.

``serve`` (runner.serve_command) and ``images`` (images.cli) belong to the server side (the ``server``
extra); on a client-only install they say so, and the client works without the server's packages.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
from collections.abc import Callable, Sequence
from typing import Annotated

import typer

from kcoral import __version__
from kcoral.cli.argv import RAW_ARGV
from kcoral.cli.commands.common import PASSTHROUGH_CONTEXT
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

__all__ = ["app", "main", "register_commands", "register_optional_commands", "run"]

VERSION = __version__

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


#: each command: its module under kcoral.cli.commands, the function (or typer app, for a group), and the
#: name of the module's OPTIONS_METAVAR for commands that pass the rest of their line on. A command's
#: module is imported only when that command runs (or for the list in --help): start-up is paid per
#: command, not for all of them.
COMMANDS: dict[str, tuple[str, str, bool]] = {
    "python": ("python_cmd", "python", True),
    "jobs": ("jobs", "jobs", False),
    "status": ("status", "status", False),
    "logs": ("logs", "logs", False),
    "cancel": ("cancel", "cancel", False),
    "gpus": ("gpus", "gpus", False),
    "ncu": ("ncu_cmd", "ncu", True),
    "iket": ("iket_cmd", "iket", True),
    "eval": ("eval_cmd", "evaluate", False),
    "tasks": ("tasks_cmd", "tasks_app", False),
    "init": ("tasks_cmd", "init", False),
    "show": ("show_cmd", "show", False),
    "rerun": ("rerun_cmd", "rerun", False),
    "wait": ("wait_cmd", "wait", False),
    "download": ("wait_cmd", "download", False),
    "doctor": ("doctor", "doctor", False),
    "mcp": ("mcp_cmd", "mcp", False),
}
CORE_COMMANDS = frozenset(COMMANDS)
_registered: set[str] = set()


def register_commands(names: Sequence[str] = tuple(COMMANDS)) -> None:
    """Add these core commands to the app (each once), importing their modules."""
    for name in names:
        if name in _registered:
            continue
        module_name, attr, passthrough = COMMANDS[name]
        module = importlib.import_module(f"kcoral.cli.commands.{module_name}")
        target = getattr(module, attr)
        if isinstance(target, typer.Typer):
            app.add_typer(target, name=name)
        elif passthrough:
            app.command(name, context_settings=PASSTHROUGH_CONTEXT, options_metavar=module.OPTIONS_METAVAR)(target)
        else:
            app.command(name)(target)
        _registered.add(name)


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
        for name in ("serve", "agent", "images"):
            target.command(
                name,
                context_settings=PASSTHROUGH_CONTEXT,
                add_help_option=False,
                help="(needs the server: pip install 'kcoral[server]')",
            )(_server_missing(name, missing))
        return
    from kcoral.images.cli import images_app
    from kcoral.runner.agent_command import agent
    from kcoral.runner.serve_command import serve

    target.command("serve")(serve)
    target.command("agent")(agent)
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
    if args and args[0] in CORE_COMMANDS:
        register_commands([args[0]])
    elif args == ["--version"]:
        pass  # answered by the root callback: no command's module is needed
    else:  # --help, a server command, a mistake: every command (the server side costs time: only here)
        register_commands()
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


#: what the HTTP client imports at start-up, when installed, that a client command never uses:
#: httpcore's async backends (trio pulls in attrs) and httpx's own command line (click, rich's
#: syntax highlighting): ~130 ms of every command on the dev VM. Each library copes with the
#: import failing (that is how it runs where they are not installed).
UNUSED_BY_CLIENT = ("trio", "anyio", "httpx._main")
#: client commands that do run async code (the MCP server: anyio), and keep those imports
ASYNC_COMMANDS = frozenset({"mcp"})


def _skip_unused_imports(args: Sequence[str]) -> None:
    """For a client command run as its own process: make those imports fail at once. The server's
    commands need anyio, so they keep it."""
    if args and args[0] in CORE_COMMANDS and args[0] not in ASYNC_COMMANDS:
        for name in UNUSED_BY_CLIENT:
            sys.modules.setdefault(name, None)  # type: ignore[arg-type]  # None: "import fails"


def main() -> None:
    """Console-script entry point (``kcoral = "kcoral.cli.main:main"``)."""
    args = sys.argv[1:]
    _skip_unused_imports(args)
    code = run()
    _quiet_broken_stdout()
    if args and args[0] in CORE_COMMANDS:
        _exit_now(code)
    sys.exit(code)


def _exit_now(code: int) -> None:
    """End a client command without the interpreter's teardown (freeing every module's objects:
    ~0.1-0.2 s on the dev VM). Nothing is lost: the commands close their files and remove their
    temporary ones themselves, and the standard streams are flushed here."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
