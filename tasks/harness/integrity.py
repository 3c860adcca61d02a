"""Tamper evidence inside the candidate's process.

The harness shares its process with the submission, so nothing here is proof; it raises the cost
of the known tricks (replaced clocks and comparators, swapped code objects, patched tensor
methods, background threads, a redirected stdout, signal handlers) and turns each into a flag.
The real bounds are outside the process: the judge's outputs check and the server's wall clock.
"""

from __future__ import annotations

import builtins
import json
import os
import signal
import threading
import time
import types
from typing import Any

import torch

_TENSOR_METHODS = ("detach", "cpu", "copy_", "fill_", "to", "clone", "abs", "pow", "mean", "sqrt", "sum", "max",
                   "is_contiguous", "is_floating_point", "add_", "numel", "elapsed_time")
_LIBRARY = {
    "time.perf_counter_ns": lambda: time.perf_counter_ns,
    "time.monotonic": lambda: time.monotonic,
    "torch.cuda.Event": lambda: torch.cuda.Event,
    "torch.cuda.Event.record": lambda: torch.cuda.Event.record,
    "torch.cuda.Event.elapsed_time": lambda: torch.cuda.Event.elapsed_time,
    "torch.cuda.Event.synchronize": lambda: torch.cuda.Event.synchronize,
    "torch.cuda.synchronize": lambda: torch.cuda.synchronize,
    "torch.save": lambda: torch.save,
    "torch.isfinite": lambda: torch.isfinite,
    "torch.nonzero": lambda: torch.nonzero,
    "threading.active_count": lambda: threading.active_count,
    "os.write": lambda: os.write,
    "os._exit": lambda: os._exit,
    "json.dumps": lambda: json.dumps,
    "builtins.print": lambda: builtins.print,
    **{f"torch.Tensor.{m}": (lambda m=m: getattr(torch.Tensor, m, None)) for m in _TENSOR_METHODS},
}


def _module_state(module: types.ModuleType) -> dict[str, Any]:
    state: dict[str, Any] = {}
    for name, value in vars(module).items():
        state[f"{module.__name__}.{name}"] = value
        if isinstance(value, types.FunctionType):
            state[f"{module.__name__}.{name}.__code__"] = value.__code__
        elif isinstance(value, type) and value.__module__ == module.__name__:
            for attr, member in vars(value).items():
                state[f"{module.__name__}.{name}.{attr}"] = member
                if isinstance(member, types.FunctionType):
                    state[f"{module.__name__}.{name}.{attr}.__code__"] = member.__code__
    return state


def _signals() -> dict[str, Any]:
    out = {}
    for sig in signal.valid_signals():
        try:
            out[f"signal {signal.Signals(sig).name}"] = signal.getsignal(sig)
        except (ValueError, OSError):
            continue
    return out


class Integrity:
    """Snapshot at start-up; ``problems()`` lists what changed since."""

    def __init__(self, modules: list[types.ModuleType]) -> None:
        self.modules = modules
        self.snapshot = self._state()
        self.stdout = self._stdout_id()

    def _state(self) -> dict[str, Any]:
        state = {name: get() for name, get in _LIBRARY.items()}
        for module in self.modules:
            state.update(_module_state(module))
        state.update(_signals())
        return state

    @staticmethod
    def _stdout_id() -> tuple[int, int] | None:
        try:
            st = os.fstat(1)
            return st.st_dev, st.st_ino
        except OSError:
            return None

    def problems(self) -> list[str]:
        now = self._state()
        found = [f"{name} was replaced" for name, value in self.snapshot.items() if now.get(name) is not value]
        found += [f"{name} was added" for name in now.keys() - self.snapshot.keys()
                  if name.startswith("signal") or name.split(".")[-1] == "__code__"]
        if self._stdout_id() != self.stdout:
            found.append("standard output was redirected")
        if threading.active_count() != 1:
            found.append(f"{threading.active_count() - 1} background thread(s) running")
        return found
