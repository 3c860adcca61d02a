"""What every profiler job kind shares about a client's words: the error they raise when refused, the
check of the profiled command, and the command that runs :mod:`profiling.run_tool` in the container.

Stdlib only and pure: the client checks with it before anything is sent, the server again at submit.
"""

from __future__ import annotations


class ToolOptionError(ValueError):
    """A client's profiler options or command are not acceptable; the message says why (one line)."""


def check_command(command: list[str], error: type[ToolOptionError], verb: str, hint: str) -> None:
    """The profiled ``command``: present, not starting with an option, no NUL byte (``error`` raised)."""
    if not command:
        raise error(f"no command to {verb}: give it after {hint}, e.g. -- python capture.py")
    if command[0].startswith("-"):
        raise error(f"the {verb}d command starts with an option ({command[0]!r}): put the options before --")
    if any("\x00" in w for w in command):
        raise error(f"the {verb}d command contains a NUL byte")


def driver_command(python: str, kind: str, own: list[str], tool_argv: list[str]) -> list[str]:
    """``python -m kcoral.profiling.run_tool KIND OWN... -- TOOL ARGS...``: the container's command."""
    return [python, "-m", "kcoral.profiling.run_tool", kind, *own, "--", *tool_argv]
