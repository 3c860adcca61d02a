"""In-container runner of Proton jobs (stdlib and the job's own triton; kcoral's code is mounted at /kcoral).

    python -m kcoral.profiling.proton_run --name /job/out/proton --data=trace --mode=default [--granularity=warp ...]
        -- capture.py ARGS          (or -- -m MODULE ARGS)

Turns on the Triton semantic of triton.profiler.language (``pl.enable_semantic("triton")``, where this triton
has it), starts Proton's instrumentation backend (``proton.start(NAME, data=..., backend="instrumentation",
mode=proton.mode.Default(**fields))``), runs the script as ``__main__`` in this process, then
``proton.finalize()``, which writes NAME.chrome_trace (data trace) or NAME.hatchet (data tree), and writes
NAME.json: what ran (triton's version, the mode, the GPU and its SM clock: Proton's trace times assume 1000 MHz).
Exits with the script's exit code; 127 with one line when this Python has no Proton, 2 with one line when
Proton refuses the options.
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import sys
import traceback
from typing import Any

UNAVAILABLE_EXIT = 127
REFUSED_EXIT = 2
#: the mode fields kcoral passes through (its option --buffer-size is the field buffer_size, ...)
MODE_FIELDS = ("granularity", "buffer_type", "buffer_strategy", "buffer_size", "optimizations")


def _say(message: str) -> None:
    sys.stdout.flush()
    sys.stderr.write(f"kcoral: {message}\n")
    sys.stderr.flush()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kcoral.profiling.proton_run")
    parser.add_argument("--name", required=True)
    parser.add_argument("--data", default="trace", choices=("trace", "tree"))
    parser.add_argument("--mode", default="default", choices=("default", "mma"))
    for name in MODE_FIELDS:
        parser.add_argument("--" + name.replace("_", "-"))
    return parser


def _import_proton() -> tuple[Any, Any, str]:
    """``(triton.profiler, triton.profiler.language, triton's version)``; ImportError with the reason."""
    try:
        import triton
    except ImportError as exc:
        raise ImportError(f"this Python ({sys.executable}) has no triton: {exc}") from None
    version = str(getattr(triton, "__version__", "?"))
    try:
        import triton.profiler as proton
        import triton.profiler.language as pl
    except ImportError as exc:
        raise ImportError(f"triton {version} has no Proton (triton.profiler): {exc}") from None
    if not hasattr(proton, "mode") or not hasattr(pl, "enter_scope"):
        raise ImportError(f"triton {version}'s Proton has no instrumentation mode (proton.mode, pl.enter_scope)")
    return proton, pl, version


def _mode(proton: Any, ns: argparse.Namespace) -> Any:
    fields: dict[str, Any] = {}
    for name in MODE_FIELDS:
        value = getattr(ns, name)
        if value is not None:
            fields[name] = int(value) if name == "buffer_size" else value
    return (proton.mode.MMA if ns.mode == "mma" else proton.mode.Default)(**fields)


def _gpu() -> dict[str, Any]:
    """The GPU and its SM clock as triton's driver sees them ({} when it cannot say)."""
    try:
        from triton.runtime import driver

        device = driver.active.get_current_device()
        props = driver.active.utils.get_device_properties(device)
        facts: dict[str, Any] = {"device": device, "sm_clock_khz": props.get("sm_clock_rate")}
        try:
            import torch

            facts["gpu"] = torch.cuda.get_device_name(device)
        except Exception:  # noqa: BLE001 - a fact, not a requirement
            pass
        return facts
    except Exception:  # noqa: BLE001 - a fact, not a requirement
        return {}


def _run_script(argv: list[str]) -> int:
    """Run ``argv`` (``SCRIPT ARGS`` or ``-m MODULE ARGS``) as ``__main__``; its exit code."""
    try:
        if argv[0] == "-m":
            sys.argv = [argv[1], *argv[2:]]
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(argv)
            sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
        return 1
    except BaseException:  # the script's failure: its traceback, as python would print it
        traceback.print_exc()
        return 1
    return 0


def main(args: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if args is None else args)
    if "--" not in args or args.index("--") == len(args) - 1:
        _say("usage: python -m kcoral.profiling.proton_run --name NAME [options] -- SCRIPT [ARGS]")
        return REFUSED_EXIT
    at = args.index("--")
    ns, script = _parser().parse_args(args[:at]), args[at + 1 :]
    try:
        proton, pl, version = _import_proton()
    except ImportError as exc:
        _say(f"Proton is not available: {exc}")
        return UNAVAILABLE_EXIT
    try:
        mode = _mode(proton, ns)
    except (TypeError, ValueError) as exc:
        _say(f"triton {version}'s Proton refused the options: {exc}")
        return REFUSED_EXIT
    if hasattr(pl, "enable_semantic"):
        pl.enable_semantic("triton")
    out = f"{ns.name}.{'hatchet' if ns.data == 'tree' else 'chrome_trace'}"
    _say(f"Proton (triton {version}): backend instrumentation, mode {mode}, data {ns.data} -> {os.path.basename(out)}")
    proton.start(ns.name, data=ns.data, backend="instrumentation", mode=mode)
    try:
        code = _run_script(script)
    finally:
        sys.stdout.flush()
        proton.finalize()
    facts = {"triton": version, "data": ns.data, "mode": str(mode), "file": os.path.basename(out), **_gpu()}
    with open(f"{ns.name}.json", "w", encoding="utf-8") as f:
        json.dump(facts, f)
    if not os.path.exists(out):
        _say(f"Proton wrote no {os.path.basename(out)} (exit code {code}): did a Triton kernel run, its scopes "
             "marked with triton.profiler.language (pl.enter_scope/pl.exit_scope)?")  # fmt: skip
    return code


if __name__ == "__main__":
    sys.exit(main())
