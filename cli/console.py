"""The ``kcoral`` console script (``kcoral = "kcoral.cli.console:main"``, and ``python -m kcoral``).

What a client command's own process sets before anything else is imported (typer, httpx, the API's
classes: the whole of its start-up), then :func:`kcoral.cli.main.run`, then its end.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys

from kcoral.cli.commands import CORE_COMMANDS

__all__ = ["main"]

#: what the HTTP client imports at start-up, when installed, that a client command never uses:
#: httpcore's async backends (trio pulls in attrs) and httpx's own command line (click, rich's
#: syntax highlighting): ~130 ms of every command on the dev VM. Each library copes with the
#: import failing (that is how it runs where they are not installed).
UNUSED_BY_CLIENT = ("trio", "anyio", "httpx._main")
#: the MCP server: a client command that lives on, serving an agent, and runs async code (anyio): it
#: keeps those imports and the collector's defaults
LONG_LIVED = frozenset({"mcp"})
#: a client command's first collection comes after this many allocations (the default: 700). Its
#: start-up (typer, httpx, the API's classes) allocates what lives to its end and leaves no cycles
#: to find, yet ran 44 collections on the way (~10 ms of ~190 on the dev VM); a long follow of a
#: job's log is still collected, as rarely.
CLIENT_GC_THRESHOLD = 100_000


def main() -> None:
    """Run ``kcoral`` with sys.argv and exit with its code."""
    args = sys.argv[1:]
    client = bool(args) and args[0] in CORE_COMMANDS
    try:
        if client:
            _client_process(args[0])
        from kcoral.cli.main import run  # noqa: PLC0415 - after the settings above: it imports typer

        code = run()
    except KeyboardInterrupt:  # Ctrl-C while the command's modules load, before run() can answer it
        from kcoral.cli.main import interrupted  # noqa: PLC0415

        code = interrupted(args)
    _quiet_broken_stdout()
    if client:
        _exit_now(code)
    sys.exit(code)


def _client_process(command: str) -> None:
    """For a client command run as its own process (the MCP server aside): make the unused imports
    fail at once, and collect garbage rarely."""
    if command in LONG_LIVED:
        return
    gc.set_threshold(CLIENT_GC_THRESHOLD, *gc.get_threshold()[1:])
    for name in UNUSED_BY_CLIENT:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]  # None: "import fails"


def _quiet_broken_stdout() -> None:
    """After a closed pipe on stdout, keep the interpreter from complaining at exit."""
    try:
        sys.stdout.flush()
    except (BrokenPipeError, ValueError, OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


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
