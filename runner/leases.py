"""Exclusive leases on execution slots: one slot per GPU, plus CPU slots for jobs without a GPU.

On a host without GPUs the CPU slots stand in for GPU jobs, so everything runs on a CPU-only
machine. Each slot owns a disjoint set of CPU cores (its containers get that cpuset), so the
timed calls of an evaluation never share a core with another job; where the host has fewer cores
than slots, slots are not pinned and ``describe`` says so. Memory bandwidth and the last-level
cache stay shared between slots. ``Placement`` is the seam for placing jobs elsewhere (many hosts): the scheduler only
needs ``try_acquire``, ``release``, ``drain`` and ``describe``.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Protocol

from kcoral.runner.errors import BadRequest
from kcoral.runner.models import GpuInfo


@dataclass(frozen=True)
class Slot:
    name: str
    gpu: GpuInfo | None = None
    #: the CPU cores this slot's containers run on (empty: not pinned)
    cpus: tuple[int, ...] = ()


@dataclass(frozen=True)
class Lease:
    slots: tuple[Slot, ...]

    @property
    def gpus(self) -> list[GpuInfo]:
        return [s.gpu for s in self.slots if s.gpu is not None]

    @property
    def name(self) -> str:
        return ",".join(s.name for s in self.slots)

    @property
    def cpuset(self) -> str:
        """The leased cores as a Docker cpuset ("0-3,8"), or "" when the slots are not pinned."""
        return ",".join(str(c) for c in sorted({c for s in self.slots for c in s.cpus}))


def split_cores(cores: list[int], slots: int) -> list[tuple[int, ...]]:
    """Disjoint, equal shares of ``cores`` for ``slots`` slots; no shares when there are too few cores."""
    if slots < 1 or len(cores) < slots:
        return [() for _ in range(slots)]
    each = len(cores) // slots
    return [tuple(cores[i * each : (i + 1) * each]) for i in range(slots)]


class Placement(Protocol):
    def check(self, gpus: int) -> None: ...
    def try_acquire(self, gpus: int) -> Lease | None: ...
    def release(self, lease: Lease) -> None: ...
    def drain(self, slot_name: str, reason: str) -> None: ...
    def describe(self) -> dict[str, object]: ...
    def slot_leases(self) -> list[Lease]: ...


@dataclass
class LeasePool:
    """Slots on this host. GPU jobs take GPU slots; jobs asking for no GPU take CPU slots."""

    gpus: list[GpuInfo]
    cpu_slots: int
    _free: set[str] = field(default_factory=set)
    _drained: dict[str, str] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    cores: list[int] = field(default_factory=lambda: sorted(os.sched_getaffinity(0)))

    def __post_init__(self) -> None:
        shares = iter(split_cores(self.cores, len(self.gpus) + self.cpu_slots))
        self._slots = {f"gpu{g.index}": Slot(f"gpu{g.index}", g, next(shares)) for g in self.gpus}
        self._slots.update({f"cpu{i}": Slot(f"cpu{i}", None, next(shares)) for i in range(self.cpu_slots)})
        self._free = set(self._slots)

    def check(self, gpus: int) -> None:
        """Refuse at submit time what this host can never run."""
        if self.gpus and gpus > len(self.gpus):
            raise BadRequest(f"the job asks for {gpus} GPUs; this server has {len(self.gpus)}")
        if not self.gpus and self.cpu_slots < 1:
            raise BadRequest("this server has no GPUs and no CPU slots")

    def try_acquire(self, gpus: int) -> Lease | None:
        with self._lock:
            usable = sorted(self._free - set(self._drained))
            if gpus > 0 and self.gpus:
                pick = [n for n in usable if n.startswith("gpu")][:gpus]
                if len(pick) < gpus:
                    return None
            else:
                pick = [n for n in usable if n.startswith("cpu")][:1]
                if not pick:
                    return None
            self._free -= set(pick)
            return Lease(tuple(self._slots[n] for n in pick))

    def release(self, lease: Lease) -> None:
        with self._lock:
            self._free |= {s.name for s in lease.slots}

    def slot_leases(self) -> list[Lease]:
        """Each slot that is not drained as a lease of its own (what a one-slot job would get)."""
        with self._lock:
            return [Lease((slot,)) for name, slot in sorted(self._slots.items()) if name not in self._drained]

    def drain(self, slot_name: str, reason: str) -> None:
        with self._lock:
            self._drained[slot_name] = reason

    def describe(self) -> dict[str, object]:
        with self._lock:
            return {
                "slots": sorted(self._slots),
                "cpus": {n: ",".join(map(str, s.cpus)) or "not pinned" for n, s in sorted(self._slots.items())},
                "free": sorted(self._free - set(self._drained)),
                "drained": dict(self._drained),
            }
