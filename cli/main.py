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

from kcoral import __version__
from kcoral.cli.argv import RAW_ARGV
from kcoral.cli.commands import COMMANDS, CORE_COMMANDS, PANELS
from kcoral.cli.commands.common import PASSTHROUGH_CONTEXT
from kcoral.cli.output import JSON_EMITTED, emit_json, error_document, exit_code_for_error, print_error
from kcoral.protocol.errors import EXIT_INTERRUPTED, EXIT_SERVER_ERROR, EXIT_USAGE, KcoralError, UsageError
from kcoral.protocol.install import install_hint

__all__ = ["app", "interrupted", "register_commands", "register_optional_commands", "run"]

VERSION = __version__

#: the end of `kcoral --help`: the first commands a newcomer runs, in order (README's first
#: screen has them too; tests/cli/test_help.py runs each)
EXAMPLES = """Start here (--remote or $KCORAL_REMOTE names the server, $KCORAL_TOKEN the token):

  kcoral serve --port 8901                      # on the GPU host
  kcoral python --send examples/hello -- main.py
  kcoral init demo/softmax sub                  # solution.py to start from
  kcoral eval demo/softmax sub --check          # correctness only, seconds
  kcoral eval demo/softmax sub --label v1       # the official score
  kcoral history demo/softmax                   # your candidates, best marked
  kcoral ncu --send examples/ncu_capture -o sm.ncu-rep -- python capture.py

Each command's options: kcoral COMMAND --help. More: README.md and docs/."""

app = typer.Typer(
    name="kcoral",
    help="Run Python and evaluate candidate kernels on a remote kcoral GPU server.",
    epilog=EXAMPLES,
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
    """Run Python and evaluate candidate kernels on a remote kcoral GPU server.

    A job sends a directory and a script, streams the output back and returns the files it wrote; an
    evaluation scores a submission against a task the server owns.
    """


_registered: set[str] = set()


def register_commands(names: Sequence[str] = tuple(COMMANDS)) -> None:
    """Add these core commands to the app (each once), importing their modules."""
    for name in names:
        if name in _registered:
            continue
        module_name, attr, passthrough = COMMANDS[name]
        module = importlib.import_module(f"kcoral.cli.commands.{module_name}")
        target = getattr(module, attr)
        panel = PANELS[name]
        if isinstance(target, typer.Typer):
            app.add_typer(target, name=name, rich_help_panel=panel)
        elif passthrough:
            app.command(
                name,
                context_settings=PASSTHROUGH_CONTEXT,
                options_metavar=module.OPTIONS_METAVAR,
                rich_help_panel=panel,
                short_help=_listed(target),
            )(target)
        else:
            app.command(name, rich_help_panel=panel, short_help=_listed(target))(target)
        _registered.add(name)


def _listed(command: Callable[..., object]) -> str | None:
    """A command's line in `kcoral --help`: its docstring's first paragraph as one line (typer's rich
    help keeps the paragraph's line breaks, which the table then wraps again)."""
    first = (command.__doc__ or "").strip().split("\n\n")[0]
    return " ".join(first.split()) or None


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
                help=f"(needs the server: {install_hint('server')})",
                rich_help_panel=PANELS[name],
            )(_server_missing(name, missing))
        return
    from kcoral.images.cli import images_app
    from kcoral.runner.cluster.agent_command import agent
    from kcoral.runner.serve_command import serve

    target.command("serve", rich_help_panel=PANELS["serve"], short_help=_listed(serve))(serve)
    target.command("agent", rich_help_panel=PANELS["agent"], short_help=_listed(agent))(agent)
    target.add_typer(images_app, name="images", rich_help_panel=PANELS["images"])


def _server_missing(name: str, missing: list[str]) -> Callable[[typer.Context], None]:
    def command(ctx: typer.Context) -> None:
        raise UsageError(
            f"`kcoral {name}` runs the server, which is not installed here "
            f"(missing: {', '.join(missing)}): {install_hint('server')}"
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

    try:
        rv = app(args=args, prog_name="kcoral", standalone_mode=False)
    except KcoralError as err:
        print_error(err)
        return _failed(args, exit_code_for_error(err), type(err).__name__, err.message, err.hint)
    except (typer.Abort, KeyboardInterrupt):
        return interrupted(args)
    except BrokenPipeError:
        return 0
    except Exception as err:
        if _is_parse_error(err):  # bad option, missing argument...: click's own message
            err.show()  # type: ignore[attr-defined]
            message = err.format_message() if hasattr(err, "format_message") else str(err)
            return _failed(args, EXIT_USAGE, "UsageError", message)
        if _debug():
            raise
        print_error(f"internal error: {type(err).__name__}: {err} (set KCORAL_DEBUG=1 for a traceback)")
        return _failed(args, EXIT_SERVER_ERROR, "InternalError", f"{type(err).__name__}: {err}")
    return rv if isinstance(rv, int) else 0


def interrupted(args: Sequence[str]) -> int:
    """Ctrl-C: the exit code, and with --json its document."""
    return _failed(args, EXIT_INTERRUPTED, "Interrupted", "interrupted")


def _failed(args: Sequence[str], code: int, kind: str, message: str, hint: str = "") -> int:
    """An error's exit code; with --json (before any ``--``) its document on stdout, unless the
    command wrote one: an agent reading stdout gets a document, always."""
    args = list(args)
    wants_json = "--json" in args[: args.index("--")] if "--" in args else "--json" in args
    if wants_json and not JSON_EMITTED.get():
        emit_json(error_document(message, code, kind, hint))
    return code
