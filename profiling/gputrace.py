"""Timeline jobs (``kcoral timeline``): which options a client may pass, the check of its command, and the
in-container command.

The recorder is torch.profiler (Kineto, which records through CUPTI: kernels, copies, memsets,
synchronisations and the CUDA runtime calls with their launching thread), run in the job's own Python
around the client's program by :mod:`profiling.gputrace_record`. So the command must be a Python
command, ``python SCRIPT [ARGS]``, ``python -m MODULE [ARGS]`` or ``python -c CODE [ARGS]``: the server
replaces its ``python`` with the job's interpreter. The Chrome trace (:data:`TRACE_FILE`, which Perfetto
opens) comes back with the job's other outputs; ``kcoral timeline summarize`` reads it.

Pure and stdlib only: the client checks with it before anything is sent, the server again at submit.
Nsight Systems (``--nsys``) is refused: no GPU host kcoral knows has it (the H200's CUDA 13.0 has none).
"""

from __future__ import annotations

import re

from kcoral.profiling.toolargs import ToolOptionError
from kcoral.profiling.toolargs import check_command as _check_command
from kcoral.protocol.jobenv import OUTPUT_MOUNT as OUTPUT_DIR

#: the Chrome trace (JSON) the recorder writes into the job's output folder
TRACE_FILE = "timeline.trace.json"
RECORDER = "kcoral.profiling.gputrace_record"


class TimelineOptionError(ToolOptionError):
    """A client's timeline options or command are not acceptable; the message says why."""


#: the recorder's options a client may pass (bare flags): name -> what it does
ALLOWED: dict[str, str] = {
    "--record-shapes": "the operators' input shapes in the trace (torch.profiler's record_shapes)",
    "--with-stack": "the Python stack of each operator (with_stack: a larger trace)",
}
#: options refused with a specific reason
REFUSED: dict[str, str] = {
    "--nsys": "Nsight Systems is not available: no kcoral GPU host has nsys (the H200's CUDA 13.0 ships without "
    "it); kcoral timeline records through CUPTI with torch.profiler instead",
    "--trace": "the server chooses where the trace is written (timeline.trace.json comes back)",
}

_PYTHON = re.compile(r"python(3(\.\d{1,2})?)?")
PYTHON_ONLY = (
    "kcoral timeline records Python programs only (torch.profiler in the job's Python): give "
    "python SCRIPT [ARGS], python -m MODULE [ARGS] or python -c CODE"
)


def take_option(args: list[str], i: int) -> tuple[list[str], int]:
    """The option at ``args[i]``: ``([its word], next index)``; TimelineOptionError when refused."""
    word = args[i]
    name = word.partition("=")[0]
    if name in REFUSED:
        raise TimelineOptionError(f"timeline option {name} is not allowed: {REFUSED[name]}")
    if name not in ALLOWED:
        raise TimelineOptionError(f"timeline option {name!r} is not known (allowed: {', '.join(ALLOWED)})")
    if name != word:
        raise TimelineOptionError(f"timeline option {name} takes no value")
    return [name], i + 1


def normalise_options(args: list[str]) -> list[str]:
    """The client's options, each allowed and given once, in :data:`ALLOWED`'s order."""
    chosen: set[str] = set()
    i = 0
    while i < len(args):
        words, i = take_option(args, i)
        if words[0] in chosen:
            raise TimelineOptionError(f"timeline option {words[0]} is given twice")
        chosen.update(words)
    return [name for name in ALLOWED if name in chosen]


def check_command(command: list[str]) -> None:
    """``python SCRIPT|-m MODULE|-c CODE [ARGS]``, else TimelineOptionError with :data:`PYTHON_ONLY`."""
    _check_command(command, TimelineOptionError, "record", "--")
    if not _PYTHON.fullmatch(command[0]):
        raise TimelineOptionError(f"{PYTHON_ONLY}, not {command[0][:80]!r}")
    if len(command) < 2:
        raise TimelineOptionError(f"{PYTHON_ONLY}: python alone runs nothing")
    first = command[1]
    if first in ("-m", "-c"):
        if len(command) < 3 or not command[2]:
            raise TimelineOptionError(f"python {first} needs its {'module' if first == '-m' else 'code'}")
    elif first.startswith("-"):
        raise TimelineOptionError(f"{PYTHON_ONLY}: python options such as {first[:20]!r} are not passed on")


def build_command(options: list[str], command: list[str], python: str = "python3") -> list[str]:
    """``PYTHON -m kcoral.profiling.gputrace_record --trace /job/out/... OPTIONS -- SCRIPT|-m M|-c C ARGS``."""
    check_command(command)
    return [python, "-m", RECORDER, "--trace", f"{OUTPUT_DIR}/{TRACE_FILE}", *normalise_options(options), "--",
            *command[1:]]  # fmt: skip
