"""The argv a job runs (the arguments after ``python``), from the command line's pieces."""

from __future__ import annotations

from collections.abc import Sequence

from kcoral.cli.errors import UsageError

__all__ = ["build_argv"]


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
