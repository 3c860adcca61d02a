"""One call on the supervisor's clock: a side's inputs written, the caches flushed, the call made and
its outputs copied, inside a window of tasks.harness.callwatch; a call alone, or a batch of calls in
one operation (TimingMethod.batch). The :class:`Calling` half of tasks.harness.supervisor.Supervisor."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from kcoral.tasks.harness import shared
from kcoral.tasks.harness.callwatch import CallWatch
from kcoral.tasks.harness.gpuclock import GpuClock, open_clock
from kcoral.tasks.harness.gpuguard import GpuGuard
from kcoral.tasks.harness.link import Worker

_ns = time.perf_counter_ns


@dataclass
class Side:
    """One worker's buffers for one case."""

    worker: Worker
    case: str
    inputs: dict[str, torch.Tensor]
    outputs: dict[str, torch.Tensor]
    bufs: list[shared.Buffer]
    #: the supervisor's private copies of the outputs, taken as each call returns (reused call to call)
    snapshot: dict[str, torch.Tensor] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.snapshot = {name: torch.empty_like(t) for name, t in self.outputs.items()}


class Calling:
    """The supervisor's timed calls (a part of tasks.harness.supervisor.Supervisor, which holds this state)."""

    device: str
    #: written before every call: the caches hold none of the previous call's data
    flush: torch.Tensor
    calls: CallWatch
    gpu: GpuGuard
    candidate: Worker | None
    null: Worker | None
    interference: list[str]
    last_call_ms: float

    def call(self, side: Side, sample: dict[str, Any]) -> tuple[float, dict[str, torch.Tensor], str | None]:
        """(ms, the side's snapshot of the outputs, error): inputs written, caches flushed, the call
        made and its outputs copied, all on the supervisor's clock. The candidate's CPU time before
        the call (since its previous call, and while its inputs were written) goes to ``self.calls``."""
        poison(side.outputs)
        if self.device == "cuda":
            shared.reset_persisting_l2()
            self._wait_quiet()
        window = self.calls.open(side.worker is self.candidate)
        self.calls.judging(window, self._watched(side.worker))
        self._sync()
        t0 = _ns()
        for name, t in side.inputs.items():
            t.copy_(sample[name])
        self.flush.add_(1.0)
        self._sync()
        self.calls.written(window)
        error = side.worker.ask({"op": "call", "case": side.case})
        for name, t in side.outputs.items():
            side.snapshot[name].copy_(t)
        self._sync()
        elapsed = (_ns() - t0) / 1e6
        self.calls.close(window)
        if side.worker is not self.candidate:
            poison(side.outputs)  # the baseline's answer never waits in memory for the candidate's call
        else:
            self.last_call_ms = elapsed
        return elapsed, side.snapshot, error

    def call_batch(
        self, sides: list[Side], samples: list[dict[str, Any]], graph: bool = False
    ) -> tuple[float, list[dict[str, torch.Tensor]], str | None]:
        """The trusted batch mode's call (TimingMethod.batch): (ms per call, each side's snapshot of its
        outputs, error). Every side's inputs are written (the i-th side gets the i-th sample; the empty
        call's side needs none) and its outputs poisoned, the cache flushed and the device idle before
        the clock starts; the clock then runs over one ``batch`` operation, in which the worker makes
        every side's call back to back and synchronises the device once, until its answer. The
        snapshots are taken after the clock stops: no output is copied inside the window, so a
        batch's time is its calls' and the protocol's (the empty call's batch measures that). ``graph``:
        the worker replays the batch's captured CUDA graph (TimingMethod.graph) instead of calling."""
        worker = sides[0].worker
        window = self.calls.open(worker is self.candidate)
        for side, sample in zip(sides, samples, strict=True):
            poison(side.outputs)
            if worker is not self.null:
                for name, t in side.inputs.items():
                    t.copy_(sample[name])
        self.flush.add_(1.0)
        if self.device == "cuda":
            shared.reset_persisting_l2()
        self._sync()
        if self.device == "cuda":
            self._wait_quiet()
        self.calls.judging(window, self._watched(worker))
        self.calls.written(window)
        t0 = _ns()
        error = worker.ask({"op": "batch", "cases": [side.case for side in sides], "graph": graph})
        elapsed = (_ns() - t0) / 1e6
        self.calls.close(window)
        for side in {id(side): side for side in sides}.values():  # the empty call's batch repeats one side
            for name, t in side.outputs.items():
                side.snapshot[name].copy_(t)
            if worker is not self.candidate:
                poison(side.outputs)
        self._sync()
        if worker is self.candidate:
            self.last_call_ms = elapsed / len(sides)
        return elapsed / len(sides), [side.snapshot for side in sides], error

    def _watched(self, worker: Worker) -> list[str]:
        return self.calls.watched(worker.trusted, worker.name)

    def _sync(self) -> None:
        if self.device == "cuda":
            torch.cuda.synchronize()

    def _wait_quiet(self) -> None:
        """Wait for a GPU no other context keeps busy (tasks.harness.gpuguard); flagged once if never."""
        flag = self.gpu.wait_quiet()
        if flag:
            self.interference.append(flag)


def gpu_probe(device: str) -> Callable[[], float]:
    """ms for one tiny kernel and a device-wide synchronize (tasks.harness.gpuguard's probe)."""
    one = torch.zeros(1, device=device)

    def probe() -> float:
        t = _ns()
        one.add_(1.0)
        torch.cuda.synchronize()
        return (_ns() - t) / 1e6

    return probe


def gpu_clock() -> GpuClock | None:
    """The leased GPU's NVML readings (None where NVML cannot be reached: no clock figures then)."""
    try:
        return open_clock(str(torch.cuda.get_device_properties(0).uuid))
    except (RuntimeError, AttributeError):
        return None


def poison(tensors: dict[str, torch.Tensor]) -> None:
    for t in tensors.values():
        t.fill_(math.nan) if t.is_floating_point() else t.fill_(-1)
