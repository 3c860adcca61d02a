"""IKET jobs: checking a client's ``run-iket`` arguments and building the in-container command.

The client sends ``argv = [run-iket options..., "profile", profile options...]`` and the profiled
command separately. The server runs

    run-iket --output-dir <stage under /job/out> <run-iket options> profile <profile options> -- <command>

through :mod:`profiling.run_tool`, which moves what run-iket wrote up into /job/out (so every file
comes back keeping its path relative to run-iket's output directory) and exits with run-iket's code.
A fresh stage directory is used because run-iket may refuse, or offer to clobber, an existing one,
and /job/out itself is a mount point that cannot be removed.
"""

from __future__ import annotations

from kcoral.profiling.toolargs import ToolOptionError
from kcoral.profiling.toolargs import driver_command as _driver
from kcoral.protocol.jobenv import OUTPUT_MOUNT as OUTPUT_DIR

#: run-iket's --output-dir inside the container; emptied into OUTPUT_DIR when it ends
STAGE_DIR = f"{OUTPUT_DIR}/.iket-stage"
SUBCOMMAND = "profile"
#: environment the server sets for every IKET job (kernels must compile inside the traced process)
IKET_ENV = {"CUTE_DSL_NO_CACHE": "1"}
_OUTPUT_OPTION = "--output-dir"


class IketOptionError(ToolOptionError):
    """A client's run-iket arguments are not acceptable; the message says why."""


def _refuse_output_dir(word: str) -> None:
    name = word.split("=", 1)[0]
    # argparse accepts unambiguous abbreviations (--out, --output-d...): refuse those too.
    if name.startswith("--") and len(name) >= 5 and _OUTPUT_OPTION.startswith(name):
        raise IketOptionError(
            f"run-iket option {name} is not allowed: the server chooses the output directory; "
            "kcoral iket --output-dir OUT says where the files go on your side"
        )


def split_iket_argv(argv: list[str]) -> tuple[list[str], list[str]]:
    """``(run-iket options, profile options)`` from ``[... , "profile", ...]``; IketOptionError when bad."""
    if SUBCOMMAND not in argv:
        raise IketOptionError("expected [run-iket options] profile [profile options], e.g. profile --postprocess json")
    at = argv.index(SUBCOMMAND)
    pre, post = argv[:at], argv[at + 1 :]
    for word in argv:
        if word == "--":
            raise IketOptionError("'--' among the run-iket options: the profiled command is sent separately")
        if "\x00" in word or "\n" in word:
            raise IketOptionError("a run-iket argument contains a NUL byte or a newline")
        _refuse_output_dir(word)
    for word in pre:
        if word in ("-o",):
            raise IketOptionError("run-iket option -o is not allowed: the server chooses the output directory")
    return pre, post


def check_command(command: list[str]) -> None:
    if not command:
        raise IketOptionError("no command to trace: give it after the second --, e.g. -- python capture.py")
    if command[0].startswith("-"):
        raise IketOptionError(f"the traced command starts with an option ({command[0]!r})")
    if any("\x00" in w for w in command):
        raise IketOptionError("the traced command contains a NUL byte")


#: what run-iket is asked for when the client chose nothing: ``all`` writes the JSON trace, the Perfetto
#: trace (``.pftrace``, for ui.perfetto.dev; ``kcoral iket summarize`` and ``plot`` read either) and its
#: self-contained HTML viewer (run-iket's profiler/postprocess.py); run-iket's own default, ``perfetto``,
#: would leave no JSON
DEFAULT_POSTPROCESS = "all"


def with_default_postprocess(profile_options: list[str]) -> list[str]:
    """Add ``--postprocess all`` when the client chose no postprocessing (its choice stands otherwise)."""
    if any(w == "--postprocess" or w.startswith("--postprocess=") for w in profile_options):
        return list(profile_options)
    return ["--postprocess", DEFAULT_POSTPROCESS, *profile_options]


def build_iket_command(
    argv: list[str], command: list[str], run_iket: str = "run-iket", output_dir: str = STAGE_DIR
) -> list[str]:
    """``run-iket --output-dir DIR <run-iket options> profile <profile options> -- <command>``."""
    pre, post = split_iket_argv(argv)
    check_command(command)
    return [run_iket, _OUTPUT_OPTION, output_dir, *pre, SUBCOMMAND, *with_default_postprocess(post), "--", *command]


def driver_command(python: str, iket_argv: list[str]) -> list[str]:
    """The container's command: run run-iket, then move its files up into /job/out."""
    return _driver(python, "iket", ["--stage", STAGE_DIR, "--out", OUTPUT_DIR], iket_argv)
