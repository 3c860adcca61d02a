"""The argv a job runs (the arguments after ``python``), from the command line's pieces."""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar

from kcoral.protocol.errors import UsageError

__all__ = ["RAW_ARGV", "build_argv", "misplaced_options"]

#: the command line as given (cli.main.run sets it): where an unknown option stood is known only here
RAW_ARGV: ContextVar[list[str] | None] = ContextVar("RAW_ARGV", default=None)


def misplaced_options(raw: Sequence[str] | None, extra: Sequence[str], program_flag: str) -> list[str]:
    """The options kcoral did not know that stood before ``program_flag`` (-c or -m): a typo of its
    own options, never the program's (whose arguments come after -c CODE / -m MODULE). ``extra``: the
    words kcoral's parser did not take, in order; ``raw``: the whole command line."""
    if not raw:
        return []
    head = list(raw[: raw.index("--")]) if "--" in raw else list(raw)
    start = next(
        (i for i, w in enumerate(head) if w == program_flag or (w.startswith(program_flag) and w[1] != "-")), None
    )
    if start is None:
        return []
    taken = 0
    for word in head[:start]:
        if taken < len(extra) and word == extra[taken]:
            taken += 1
    return [w for w in extra[:taken] if w.startswith("-")]


def build_argv(args: Sequence[str], code: str | None = None, module: str | None = None) -> list[str]:
    """``-c CODE ARGS`` -> ``["-c", CODE, *ARGS]``; ``-m MOD ARGS`` -> ``["-m", MOD, *ARGS]``;
    otherwise ``SCRIPT ARGS`` -> ``[SCRIPT, *ARGS]``.

    ``args`` are the words after kcoral's own options, given to the program untouched.
    """
    if code is not None and module is not None:
        raise UsageError("give -c CODE or -m MODULE, not both")
    if code is not None:
        return ["-c", code, *args]
    if module is not None:
        if not module or module.startswith("-"):
            raise UsageError(f"bad module name {module!r} for -m")
        return ["-m", module, *args]
    if not args:
        raise UsageError("nothing to run: give SCRIPT [ARGS...], -c CODE or -m MODULE")
    script = args[0]
    if script.startswith("-"):
        raise UsageError(
            f"unknown option {script!r}",
            hint="kcoral's options come before the script; everything after SCRIPT (or --) goes to it",
        )
    return list(args)
