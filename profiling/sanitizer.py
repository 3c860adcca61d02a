"""compute-sanitizer jobs: which options a client may pass, and the in-container command.

Pure functions, shared by the server (validation at submit, command building) and the client (the same
check before anything is sent). The client's options travel as ``--long=value`` words, each checked
against :data:`ALLOWED` (a name, a value of a fixed set or a number); everything else is refused. The
server adds what it decides itself: where the reports go (``--log-file``, ``--save`` with ``--xml``)
and the exit code that says errors were found (``--error-exitcode`` :data:`ERRORS_EXIT`).
"""

from __future__ import annotations

from dataclasses import dataclass

from kcoral.profiling.sanitizer_findings import ERRORS_EXIT
from kcoral.profiling.toolargs import ToolOptionError
from kcoral.profiling.toolargs import check_command as _check_command
from kcoral.profiling.toolargs import driver_command as _driver
from kcoral.protocol.jobenv import OUTPUT_MOUNT as OUTPUT_DIR

#: the text report (compute-sanitizer's --log-file) and the XML report (--save with --xml)
TEXT_FILE = "sanitizer.txt"
XML_FILE = "sanitizer.xml"
TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")
DEFAULT_TOOL = "memcheck"


class SanitizerOptionError(ToolOptionError):
    """A client's compute-sanitizer options are not acceptable; the message says why."""


@dataclass(frozen=True)
class SanitizerOption:
    long: str
    #: the values it takes (None: a non-negative integer when ``integer``, else any one-line text)
    choices: tuple[str, ...] | None = None
    integer: bool = False
    #: compute-sanitizer takes it bare (no value): the client says yes or no, and yes passes the bare flag
    flag: bool = False
    #: the tools it applies to (None: every tool)
    tools: tuple[str, ...] | None = None
    help: str = ""


#: The options a client may pass (compute-sanitizer's own names), by long name.
ALLOWED: dict[str, SanitizerOption] = {
    o.long: o
    for o in (
        SanitizerOption("--tool", TOOLS, help="the checker"),
        SanitizerOption("--leak-check", ("full", "no"), tools=("memcheck",), help="report leaked allocations"),
        SanitizerOption(
            "--check-device-heap", ("yes", "no"), tools=("memcheck",), help="check device-heap allocations"
        ),
        SanitizerOption("--padding", integer=True, tools=("memcheck",), help="bytes of padding after each allocation"),
        SanitizerOption("--racecheck-report", ("analysis", "hazard", "all"), tools=("racecheck",), help="report kind"),
        SanitizerOption(
            "--track-unused-memory", ("yes", "no"), flag=True, tools=("initcheck",), help="report unused memory"
        ),
        SanitizerOption("--print-limit", integer=True, help="errors printed at most (0: all)"),
        SanitizerOption("--show-backtrace", ("yes", "no", "host", "device"), help="backtraces shown"),
        SanitizerOption("--kernel-name", help="only these kernels (kns=NAME, kne=NAME, ...)"),
        SanitizerOption("--kernel-name-exclude", help="not these kernels"),
        SanitizerOption("--launch-skip", integer=True, help="launches skipped first"),
        SanitizerOption("--launch-count", integer=True, help="launches checked (0: all)"),
    )
}

_SERVER = "the server chooses where the reports are written (sanitizer.txt and sanitizer.xml come back)"
#: Options refused with a specific reason (anything else unknown is refused generically).
REFUSED: dict[str, str] = {
    "--save": _SERVER,
    "--log-file": _SERVER,
    "--xml": _SERVER,
    "--error-exitcode": f"the server sets it: exit code {ERRORS_EXIT} means compute-sanitizer reported errors",
    "--prefix": "the summary reads compute-sanitizer's own ========= prefix",
    "--read": "reading a saved report happens on your side: kcoral sanitizer summarize FILE",
}


def allowed_list() -> str:
    return ", ".join(ALLOWED)


def _value(option: SanitizerOption, value: str) -> str:
    if value == "":
        raise SanitizerOptionError(f"compute-sanitizer option {option.long} needs a value")
    if any(c in value for c in "\x00\n\r"):
        raise SanitizerOptionError(f"the value of compute-sanitizer option {option.long} contains a control character")
    if option.integer and not (value.isascii() and value.isdigit() and len(value) <= 9):
        raise SanitizerOptionError(
            f"compute-sanitizer option {option.long} takes a non-negative integer, not {value!r}"
        )
    if option.choices is not None and value not in option.choices:
        raise SanitizerOptionError(
            f"compute-sanitizer option {option.long} takes one of {', '.join(option.choices)}, not {value!r}"
        )
    return value


def take_option(args: list[str], i: int) -> tuple[str, str, int]:
    """The option at ``args[i]`` (``--opt value`` or ``--opt=value``): ``(long name, value, next index)``."""
    word = args[i]
    name, sep, inline = word.partition("=")
    if name in REFUSED:
        raise SanitizerOptionError(f"compute-sanitizer option {name} is not allowed: {REFUSED[name]}")
    option = ALLOWED.get(name)
    if option is None:
        raise SanitizerOptionError(
            f"compute-sanitizer option {name!r} is not allowed through kcoral (allowed: {allowed_list()})"
        )
    if sep:
        return name, _value(option, inline), i + 1
    if i + 1 >= len(args):
        raise SanitizerOptionError(f"compute-sanitizer option {name} needs a value")
    return name, _value(option, args[i + 1]), i + 2


def normalise_options(args: list[str]) -> list[str]:
    """A client's options as ``--long=value`` words, ``--tool`` first (memcheck when not given), each
    checked: allowed, its value valid, for the chosen tool, at most once. SanitizerOptionError if not."""
    chosen: dict[str, str] = {}
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            raise SanitizerOptionError("'--' among the compute-sanitizer options: the command is sent separately")
        if not word.startswith("--"):
            raise SanitizerOptionError(f"unexpected word {word!r} among the compute-sanitizer options")
        name, value, i = take_option(args, i)
        if name in chosen:
            raise SanitizerOptionError(f"compute-sanitizer option {name} is given twice")
        chosen[name] = value
    tool = chosen.pop("--tool", DEFAULT_TOOL)
    for name in chosen:
        tools = ALLOWED[name].tools
        if tools is not None and tool not in tools:
            raise SanitizerOptionError(f"compute-sanitizer option {name} applies to {', '.join(tools)}, not {tool}")
    words = [f"--tool={tool}"]
    for name, value in chosen.items():
        if not ALLOWED[name].flag:
            words.append(f"{name}={value}")
        elif value == "yes":
            words.append(name)
    return words


def tool_of(options: list[str]) -> str:
    """The checker normalised ``options`` name."""
    return normalise_options(options)[0].partition("=")[2]


def check_command(command: list[str]) -> None:
    _check_command(command, SanitizerOptionError, "sanitize", "--")


def build_command(options: list[str], command: list[str], sanitizer: str = "compute-sanitizer") -> list[str]:
    """``compute-sanitizer --tool=T --error-exitcode=86 --log-file=... --save=... --xml <options> <command>``."""
    check_command(command)
    tool, *rest = normalise_options(options)
    return [
        sanitizer,
        tool,
        f"--error-exitcode={ERRORS_EXIT}",
        f"--log-file={OUTPUT_DIR}/{TEXT_FILE}",
        f"--save={OUTPUT_DIR}/{XML_FILE}",
        "--xml",  # a bare flag: compute-sanitizer 2025.3 refuses "--xml=yes" (its help, on the H200)
        *rest,
        *command,
    ]


def driver_command(python: str, sanitizer_argv: list[str]) -> list[str]:
    """The container's command: run compute-sanitizer, then count the errors of its reports."""
    own = ["--text", f"{OUTPUT_DIR}/{TEXT_FILE}", "--xml", f"{OUTPUT_DIR}/{XML_FILE}"]
    return _driver(python, "sanitizer", own, sanitizer_argv)
