"""Nsight Compute jobs: which ncu options a client may pass through, and the in-container command.

Pure functions, shared by the server (validation at submit, command building) and the client
(the same check before anything is sent). Options are normalised to ``--long=value`` so that a
value can never be read as another option by ncu.
"""

from __future__ import annotations

from dataclasses import dataclass

from kcoral.profiling.toolargs import ToolOptionError
from kcoral.profiling.toolargs import driver_command as _driver
from kcoral.protocol.jobenv import OUTPUT_MOUNT as OUTPUT_DIR  # where the report and its summary are written

REPORT_NAME = "report"
REPORT_FILE = f"{REPORT_NAME}.ncu-rep"
SUMMARY_FILE = f"{REPORT_FILE}.json"


@dataclass(frozen=True)
class NcuOption:
    long: str
    short: str | None = None
    takes_value: bool = True
    #: the value must be a non-negative integer
    integer: bool = False


#: The options a client may pass through (../shared/notes/profiling.md), by long name.
ALLOWED: dict[str, NcuOption] = {
    o.long: o
    for o in (
        NcuOption("--set"),
        NcuOption("--section"),
        NcuOption("--metrics"),
        NcuOption("--launch-count", "-c", integer=True),
        NcuOption("--launch-skip", "-s", integer=True),
        NcuOption("--kernel-name", "-k"),
        NcuOption("--kernel-name-base"),
        NcuOption("--kernel-id"),
        NcuOption("--nvtx", takes_value=False),
        NcuOption("--nvtx-include"),
        NcuOption("--nvtx-exclude"),
        NcuOption("--replay-mode"),
        NcuOption("--clock-control"),
        NcuOption("--cache-control"),
        NcuOption("--target-processes"),
        NcuOption("--import-source"),
    )
}
_BY_SHORT = {o.short: o for o in ALLOWED.values() if o.short}

#: Options refused with a specific reason (anything else unknown is refused generically).
REFUSED: dict[str, str] = {
    "-o": "the server chooses where the report is written; give the local path with kcoral's -o FILE.ncu-rep",
    "--export": "the server chooses where the report is written; give the local path with kcoral's -o FILE.ncu-rep",
    "--config-file": "the server runs ncu with --config-file 0; pass the options themselves",
    "--config-file-path": "the server runs ncu with --config-file 0; pass the options themselves",
    "--log-file": "ncu's output goes to the job log; --log-file is not allowed",
    "-f": "overwriting is decided on the client: pass -f to kcoral ncu (it overwrites the local -o file)",
    "--force-overwrite": "overwriting is decided on the client: pass -f to kcoral ncu",
    "-i": "--import reads a report on the server; use `kcoral ncu summarize FILE.ncu-rep` locally",
    "--import": "--import reads a report on the server; use `kcoral ncu summarize FILE.ncu-rep` locally",
}


class NcuOptionError(ToolOptionError):
    """A client's ncu options are not acceptable; the message says why."""


def allowed_list() -> str:
    return ", ".join(f"{o.long}/{o.short}" if o.short else o.long for o in ALLOWED.values())


def _lookup(word: str) -> tuple[NcuOption | None, str | None]:
    """The option ``word`` names (``--opt``, ``--opt=value``, ``-c``) and its inline value, if any."""
    name, sep, inline = word.partition("=")
    if name in REFUSED:
        raise NcuOptionError(f"ncu option {name} is not allowed: {REFUSED[name]}")
    option = ALLOWED.get(name) or _BY_SHORT.get(name)
    if option is None and not word.startswith("--") and word[:2] in _BY_SHORT:  # -c5
        return _BY_SHORT[word[:2]], word[2:]
    if option is None:
        raise NcuOptionError(f"ncu option {name} is not allowed through kcoral (allowed: {allowed_list()})")
    return option, (inline if sep else None)


def _check_value(option: NcuOption, value: str) -> None:
    if value == "":
        raise NcuOptionError(f"ncu option {option.long} needs a value")
    if "\x00" in value or "\n" in value:
        raise NcuOptionError(f"the value of ncu option {option.long} contains a NUL byte or a newline")
    if option.integer and not value.isdigit():
        raise NcuOptionError(f"ncu option {option.long} takes a non-negative integer, not {value!r}")


def take_ncu_option(args: list[str], i: int) -> tuple[list[str], int]:
    """Parse the option at ``args[i]``; return its normalised form and the index after it.

    Raises NcuOptionError for a refused or unknown option, or a missing/bad value.
    """
    word = args[i]
    option, inline = _lookup(word)
    assert option is not None
    if not option.takes_value:
        if inline is not None:
            raise NcuOptionError(f"ncu option {option.long} takes no value (got {word!r})")
        return [option.long], i + 1
    if inline is not None:
        value, nxt = inline, i + 1
    else:
        if i + 1 >= len(args):
            raise NcuOptionError(f"ncu option {word} needs a value")
        value, nxt = args[i + 1], i + 2
    _check_value(option, value)
    return [f"{option.long}={value}"], nxt


def normalise_ncu_options(args: list[str]) -> list[str]:
    """Check a client's ncu options; return them as ``--long=value`` / ``--flag`` words.

    Accepts ``--opt value``, ``--opt=value`` and the short forms ``-c N``, ``-s N``, ``-k NAME``.
    Every word must belong to an option: the profiled command travels separately.
    """
    out: list[str] = []
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            raise NcuOptionError("'--' among the ncu options: the profiled command is sent separately")
        if not word.startswith("-") or word == "-":
            raise NcuOptionError(f"unexpected word {word!r} among the ncu options (put the command after --)")
        words, i = take_ncu_option(args, i)
        out.extend(words)
    return out


def check_command(command: list[str]) -> None:
    if not command:
        raise NcuOptionError("no command to profile: give it after --, e.g. -- python capture.py")
    if command[0].startswith("-"):
        raise NcuOptionError(f"the profiled command starts with an option ({command[0]!r}): put ncu options before --")
    if any("\x00" in w for w in command):
        raise NcuOptionError("the profiled command contains a NUL byte")


def build_ncu_command(options: list[str], command: list[str], ncu: str = "ncu") -> list[str]:
    """``ncu --config-file 0 --export /job/out/report.ncu-rep <options> <command>`` (options checked)."""
    check_command(command)
    return [
        ncu,
        "--config-file",
        "0",
        "--export",
        f"{OUTPUT_DIR}/{REPORT_FILE}",
        *normalise_ncu_options(options),
        *command,
    ]


def driver_command(python: str, ncu_argv: list[str]) -> list[str]:
    """The container's command: run ncu, then summarise its report; exits with ncu's code."""
    return _driver(
        python,
        "ncu",
        ["--report", f"{OUTPUT_DIR}/{REPORT_FILE}", "--summary", f"{OUTPUT_DIR}/{SUMMARY_FILE}"],
        ncu_argv,
    )
