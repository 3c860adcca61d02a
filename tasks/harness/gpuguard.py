"""What the supervisor does about the GPU before it times a call: let a GPU hotter than the method's
``hot_c`` cool first (a clock slowed for heat is not the submission's doing), and wait for a GPU that
another context keeps busy, flagging it once it never quiets.

Pure but for what it is given: the NVML clock (tasks.harness.gpuclock) and a probe (ms for one tiny
kernel and a device-wide synchronize); the clock and the pause can be anyone's, as in the unit tests.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from kcoral.tasks.harness.gpuclock import Reading
from kcoral.tasks.harness.interference import busy_gpu


class Clock(Protocol):
    def read(self) -> Reading | None: ...


@dataclass
class GpuGuard:
    #: NVML's readings of the leased GPU; None where they cannot be had (a CPU task, no NVML)
    clock: Clock | None
    #: ms for one tiny kernel and a device-wide synchronize; None on a CPU
    probe: Callable[[], float] | None
    hot_c: float
    cool_s: float
    quiet_probe_ms: float
    #: the GPU stayed busy with others' work once: it is not waited for again
    busy: bool = False
    pause: Callable[[float], None] = time.sleep
    now: Callable[[], float] = time.monotonic

    def cool(self) -> float:
        """Seconds spent letting a GPU hotter than ``hot_c`` cool (``cool_s`` at most), before a case's
        sampling starts; 0 without a clock or where NVML cannot be read."""
        if self.clock is None:
            return 0.0
        began = self.now()
        while (reading := self.clock.read()) is not None and reading.temp_c > self.hot_c:
            if self.now() - began >= self.cool_s:
                print(f"the GPU was still at {reading.temp_c} C after {self.cool_s:.0f} s of cooling", file=sys.stderr)
                break
            self.pause(0.5)
        return round(self.now() - began, 3)

    def ran_on(self) -> float | None:
        """Right after the candidate's call answered and its outputs were copied: the fastest of three
        probes where none was under ``quiet_probe_ms`` (the GPU still ran another context's work: the
        call's, since the trusted workers wait for theirs), else None, at the first fast one. Not on a
        GPU flagged busy already (every probe is slow there)."""
        if self.busy or self.probe is None:
            return None
        return busy_gpu(self.probe, self.quiet_probe_ms, rounds=1, pause=lambda _: None)

    def wait_quiet(self) -> str | None:
        """Wait until no other context keeps the GPU busy; the interference flag, once, when that never
        happens (later calls do not wait again), else None.

        The probe is the fastest of three tiny kernels, each with a device-wide synchronize: on an idle
        H200 one takes ~0.1 ms (p50 98 us, p99 174 us), behind another process's queued work ~0.35 ms
        (p10 329 us), since the GPU must switch contexts first (bench/gpu_quiet_probe.py)."""
        if self.busy or self.probe is None:
            return None
        fastest = busy_gpu(self.probe, self.quiet_probe_ms, pause=self.pause)
        if fastest is None:
            return None
        self.busy = True
        return (
            f"the GPU stayed busy with work the supervisor did not start (the fastest probe "
            f"kernel took {fastest:.3f} ms; limit {self.quiet_probe_ms} ms)"
        )
