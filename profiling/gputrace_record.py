"""In-container recorder of timeline jobs: the client's Python program inside torch.profiler, its Chrome trace
written when the program ends, however it ends (returns, raises, calls sys.exit).

    python -m kcoral.profiling.gputrace_record --trace /job/out/timeline.trace.json [--record-shapes]
        [--with-stack] -- SCRIPT [ARGS] | -m MODULE [ARGS] | -c CODE [ARGS]

The program runs in this process as ``python SCRIPT`` would run it (runpy: ``__main__``, ``sys.argv``,
the script's folder first on ``sys.path``). torch.profiler records the CPU operators and, where CUDA
is available, the GPU activity through CUPTI (Kineto): kernels, copies, memsets, the runtime and driver
calls with their thread, and the synchronisations per stream where this torch records them. The exit
code is the program's. A program killed by a signal or by the job's deadline, or one that calls
``os._exit``, leaves no trace. torch is imported only here (kcoral's server and client never need it).
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
import traceback
from typing import Any


def _say(message: str) -> None:
    sys.stderr.write(f"kcoral timeline: {message}\n")
    sys.stderr.flush()


def exit_code(code: object) -> int:
    """The process exit code ``sys.exit(code)`` gives (None: 0, an int: itself, anything else printed: 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    sys.stderr.write(f"{code}\n")
    return 1


def run_target(target: list[str]) -> int:
    """Run ``SCRIPT ARGS | -m MODULE ARGS | -c CODE ARGS`` as python would; its exit code."""
    try:
        if target[0] == "-m":
            sys.argv = [target[1], *target[2:]]  # runpy puts the module's path in argv[0]
            sys.path[0] = os.getcwd()
            runpy.run_module(target[1], run_name="__main__", alter_sys=True)
        elif target[0] == "-c":
            sys.argv = ["-c", *target[2:]]
            sys.path[0] = ""
            exec(compile(target[1], "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
        else:
            sys.argv = list(target)
            sys.path[0] = os.path.dirname(os.path.abspath(target[0]))
            runpy.run_path(target[0], run_name="__main__")
    except SystemExit as exc:
        return exit_code(exc.code)
    except BaseException:  # the program's own failure (KeyboardInterrupt included): shown as python shows it
        traceback.print_exc()
        return 1
    return 0


def make_profiler(record_shapes: bool, with_stack: bool) -> Any:
    """torch.profiler.profile over the CPU and, when there is a GPU, CUDA (with synchronisation events
    when this torch can record them)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU]
    extra: dict[str, Any] = {}
    if torch.cuda.is_available():
        activities.append(ProfilerActivity.CUDA)
        try:  # CUPTI's synchronisation records: stream/event/context syncs and stream waits, per stream
            from torch._C._profiler import _ExperimentalConfig

            extra["experimental_config"] = _ExperimentalConfig(enable_cuda_sync_events=True)
        except (ImportError, TypeError):
            pass
    else:
        _say("no GPU is visible to torch: only CPU activity is recorded")
    return profile(activities=activities, record_shapes=record_shapes, with_stack=with_stack, **extra)


def record(trace: str, target: list[str], profiler: Any) -> int:
    """Run ``target`` inside ``profiler`` (started and stopped here), then write its Chrome trace."""
    profiler.start()
    try:
        code = run_target(target)
    finally:
        sys.stdout.flush()
        try:
            profiler.stop()
            profiler.export_chrome_trace(trace)
        except Exception as exc:  # the program's exit code still stands
            _say(f"could not write the trace: {type(exc).__name__}: {exc}")
    if os.path.isfile(trace):
        _say(f"trace written: {os.path.basename(trace)} ({os.path.getsize(trace)} bytes)")
    return code


def main(args: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if args is None else args)
    if "--" not in args:
        _say("usage: python -m kcoral.profiling.gputrace_record --trace FILE [options] -- SCRIPT|-m M|-c C ARGS")
        return 2
    at = args.index("--")
    own, target = args[:at], args[at + 1 :]
    parser = argparse.ArgumentParser(prog="kcoral.profiling.gputrace_record")
    parser.add_argument("--trace", required=True)
    parser.add_argument("--record-shapes", action="store_true")
    parser.add_argument("--with-stack", action="store_true")
    ns = parser.parse_args(own)
    if not target or (target[0] in ("-m", "-c") and len(target) < 2):
        _say("no program after --")
        return 2
    try:
        profiler = make_profiler(ns.record_shapes, ns.with_stack)
    except ImportError as exc:
        _say(f"torch.profiler is not importable in this Python ({sys.executable}): {exc}")
        return 127
    return record(ns.trace, target, profiler)


if __name__ == "__main__":
    sys.exit(main())
