"""Proton jobs: which options a client may pass, the profiled Python command, and the in-container command.

Triton's Proton (``triton.profiler``) is a library, not a program: it profiles the process it is started
in. So the job's command is a Python command (``python capture.py ARGS``, ``python -m MODULE ARGS``),
and the server runs it under :mod:`profiling.proton_run`, which starts Proton in its instrumentation
mode around the script and finalizes it after::

    python -m kcoral.profiling.proton_run --name /job/out/proton --data trace [--granularity=warp ...]
        -- capture.py ARGS

The kernels mark their scopes with ``triton.profiler.language`` (``pl.enter_scope``/``pl.exit_scope`` or
``with pl.scope(...)``); the trace (``proton.chrome_trace``) or the tree (``proton.hatchet``) comes back.
Pure and stdlib only: the client checks with it before anything is sent, the server again at submit.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kcoral.profiling.toolargs import ToolOptionError
from kcoral.profiling.toolargs import check_command as _check_command
from kcoral.protocol.jobenv import OUTPUT_MOUNT as OUTPUT_DIR

#: the name given to proton.start: Proton adds the extension (.chrome_trace for a trace, .hatchet for a tree)
OUTPUT_NAME = "proton"
TRACE_FILE = f"{OUTPUT_NAME}.chrome_trace"
TREE_EXTENSION = ".hatchet"
TREE_FILE = f"{OUTPUT_NAME}{TREE_EXTENSION}"
#: the module that runs the client's script under Proton (kcoral's code is mounted into the job)
RUNNER_MODULE = "kcoral.profiling.proton_run"
#: what a Python command's first word may be (it is replaced by the server's interpreter)
PYTHON_WORD = re.compile(r"^python(\d+(\.\d+)?)?$")


class ProtonOptionError(ToolOptionError):
    """A client's Proton options or command are not acceptable; the message says why."""


@dataclass(frozen=True)
class ProtonOption:
    long: str
    #: the values it takes (None: a non-negative integer when ``integer``, else a list of ``choices``)
    choices: tuple[str, ...] | None = None
    integer: bool = False
    #: a comma-separated list of ``choices``
    listed: bool = False
    help: str = ""


#: The options a client may pass, by long name: ``--data`` is kcoral's (what proton.start writes), the others
#: are the fields of triton.profiler.mode's instrumentation modes (triton 3.6), passed as their strings.
ALLOWED: dict[str, ProtonOption] = {
    o.long: o
    for o in (
        ProtonOption("--data", ("trace", "tree"), help="trace: per-warp events (.chrome_trace); tree: sums (.hatchet)"),
        ProtonOption("--mode", ("default", "mma"), help="the instrumentation mode (proton.mode.Default or MMA)"),
        ProtonOption(
            "--granularity",
            ("cta", "warp", "warp_2", "warp_4", "warp_8", "warp_group", "warp_group_2", "warp_group_4", "warp_group_8"),
            help="which warps record",
        ),
        ProtonOption("--buffer-type", ("shared", "global", "stack"), help="where the events are buffered"),
        ProtonOption("--buffer-strategy", ("circular", "flush"), help="what a full buffer does"),
        ProtonOption("--buffer-size", integer=True, help="bytes of the buffer (0: Proton's choice)"),
        ProtonOption("--optimizations", ("time_shift", "sched_stores"), listed=True, help="comma-separated"),
    )
}
DEFAULTS = {"--data": "trace", "--mode": "default"}

REFUSED: dict[str, str] = {
    "--name": "the server chooses where the files are written (proton.chrome_trace or proton.hatchet come back)",
    "--backend": "kcoral proton runs Proton's instrumentation backend (kcoral ncu or kcoral python for the others)",
    "--hook": "kcoral proton profiles inside the kernels (intra-kernel scopes); the launch hook is not used",
}


def allowed_list() -> str:
    return ", ".join(ALLOWED)


def _value(option: ProtonOption, value: str) -> str:
    what = f"Proton option {option.long}"
    if value == "":
        raise ProtonOptionError(f"{what} needs a value")
    if option.integer:
        if not (value.isascii() and value.isdigit() and len(value) <= 10):
            raise ProtonOptionError(f"{what} takes a non-negative integer, not {value[:40]!r}")
        return value
    words = value.split(",") if option.listed else [value]
    for word in words:
        if option.choices is not None and word not in option.choices:
            raise ProtonOptionError(f"{what} takes {'a list of ' if option.listed else ''}one of "
                                    f"{', '.join(option.choices)}, not {word[:40]!r}")  # fmt: skip
    return value


def take_option(args: list[str], i: int) -> tuple[str, str, int]:
    """The option at ``args[i]`` (``--opt value`` or ``--opt=value``): ``(long name, value, next index)``."""
    name, sep, inline = args[i].partition("=")
    if name in REFUSED:
        raise ProtonOptionError(f"Proton option {name} is not allowed: {REFUSED[name]}")
    option = ALLOWED.get(name)
    if option is None:
        raise ProtonOptionError(f"Proton option {name[:40]!r} is not allowed through kcoral ({allowed_list()} are)")
    if sep:
        return name, _value(option, inline), i + 1
    if i + 1 >= len(args):
        raise ProtonOptionError(f"Proton option {name} needs a value")
    return name, _value(option, args[i + 1]), i + 2


def normalise_options(args: list[str]) -> list[str]:
    """A client's options as ``--long=value`` words, ``--data`` and ``--mode`` first (their defaults when not
    given), each checked: allowed, its value valid, at most once. ProtonOptionError if not."""
    chosen: dict[str, str] = {}
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            raise ProtonOptionError("'--' among the Proton options: the command is sent separately")
        if not word.startswith("--"):
            raise ProtonOptionError(f"unexpected word {word[:40]!r} among the Proton options")
        name, value, i = take_option(args, i)
        if name in chosen:
            raise ProtonOptionError(f"Proton option {name} is given twice")
        chosen[name] = value
    merged = {**DEFAULTS, **chosen}
    order = [*DEFAULTS, *(n for n in ALLOWED if n in chosen and n not in DEFAULTS)]
    return [f"{name}={merged[name]}" for name in order]


def output_file(options: list[str]) -> str:
    """The file the job writes for normalised ``options``: the trace or the tree."""
    return TREE_FILE if "--data=tree" in options else TRACE_FILE


def python_argv(command: list[str]) -> list[str]:
    """Python's arguments of a Python command: ``python SCRIPT.py ARGS`` or ``python -m MODULE ARGS`` (the
    interpreter word is the server's own; ``SCRIPT.py ARGS`` alone is taken too). ProtonOptionError if not."""
    _check_command(command, ProtonOptionError, "profile", "--")
    words = command[1:] if PYTHON_WORD.match(os.path.basename(command[0])) else list(command)
    if not words:
        raise ProtonOptionError("no script to profile: give python SCRIPT.py [ARGS] or python -m MODULE [ARGS]")
    if words[0] == "-m":
        if len(words) < 2 or not re.fullmatch(r"[A-Za-z_][\w.]*", words[1]):
            raise ProtonOptionError("python -m needs a module name, e.g. -- python -m mypackage.capture")
        return words
    if words[0].startswith("-"):
        raise ProtonOptionError(
            f"kcoral proton runs a script or a module under Proton (python SCRIPT.py or python -m MODULE), "
            f"not python {words[0][:20]}: Triton reads a kernel's source from its file"
        )
    return words


def check_command(command: list[str]) -> None:
    python_argv(command)


def build_command(options: list[str], command: list[str], python: str = "python3") -> list[str]:
    """``PYTHON -m kcoral.profiling.proton_run --name /job/out/proton <options> -- SCRIPT ARGS``."""
    argv = python_argv(command)
    return [python, "-m", RUNNER_MODULE, "--name", f"{OUTPUT_DIR}/{OUTPUT_NAME}", *normalise_options(options),
            "--", *argv]  # fmt: skip


def clock_mhz(output_dir: Path) -> float | None:
    """The SM clock of the job's GPU in MHz, from the facts the job wrote beside its trace (proton.json)."""
    try:
        facts = json.loads((output_dir / f"{OUTPUT_NAME}.json").read_text())
        khz = facts.get("sm_clock_khz")
    except (OSError, ValueError, AttributeError):
        return None
    return float(khz) / 1000 if isinstance(khz, int | float) and not isinstance(khz, bool) and khz > 0 else None


def job_summary(output_dir: Path) -> dict[str, Any] | None:
    """The summary of the trace a job returned into ``output_dir`` (iket_summary's, microseconds at the GPU's
    clock added); None when no trace came back, iket_trace.TraceError when it cannot be read."""
    from kcoral.profiling.iket_load import load
    from kcoral.profiling.iket_summary import summarize

    trace = output_dir / TRACE_FILE
    return summarize(load(trace), clock_mhz=clock_mhz(output_dir)) if trace.is_file() else None
