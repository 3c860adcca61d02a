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
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from kcoral.protocol.errors import BadRequest
from kcoral.protocol.models import GpuInfo


@dataclass(frozen=True)
class Slot:
    name: str
    gpu: GpuInfo | None = None
    #: the CPU cores this slot's containers run on (empty: not pinned)
    cpus: tuple[int, ...] = ()
    #: what a job's ``gpu_type`` is matched against (:func:`gpu_type`); "" for a CPU slot not labelled
    type: str = ""


def gpu_type(name: str) -> str:
    """The short type of a GPU by its NVML name: "NVIDIA H200" -> "H200", "NVIDIA H100 80GB HBM3" -> "H100"."""
    words = name.split()
    if words and words[0].upper() == "NVIDIA":
        words = words[1:]
    return words[0] if words else name


def gpu_types(gpus: Sequence[GpuInfo]) -> list[str]:
    """The short types of ``gpus`` (:func:`gpu_type`), in their order."""
    return [gpu_type(g.name) for g in gpus]


def type_matches(slot: Slot, wanted: str) -> bool:
    """Whether ``slot`` serves a job that asks for GPUs of type ``wanted`` ("any": every slot)."""
    return wanted == "any" or slot.type.lower() == wanted.lower()


@dataclass(frozen=True)
class Lease:
    slots: tuple[Slot, ...]
    #: the cluster host the slots are on ("": this server's own; runner.cluster)
    host: str = ""

    @property
    def gpus(self) -> list[GpuInfo]:
        return [s.gpu for s in self.slots if s.gpu is not None]

    @property
    def name(self) -> str:
        """The slots' names; a cluster host's slots as HOST/SLOT (what the store keeps of a running job)."""
        return ",".join(f"{self.host}/{s.name}" if self.host else s.name for s in self.slots)

    @property
    def cores(self) -> tuple[int, ...]:
        """The leased cores, in order (none when the slots are not pinned)."""
        return tuple(sorted({c for s in self.slots for c in s.cpus}))

    @property
    def cpuset(self) -> str:
        """The leased cores as a Docker cpuset ("0,1,8"), or "" when the slots are not pinned."""
        return ",".join(str(c) for c in self.cores)


def split_cores(cores: list[int], slots: int) -> list[tuple[int, ...]]:
    """Disjoint, equal shares of ``cores`` for ``slots`` slots; no shares when there are too few cores."""
    if slots < 1 or len(cores) < slots:
        return [() for _ in range(slots)]
    each = len(cores) // slots
    return [tuple(cores[i * each : (i + 1) * each]) for i in range(slots)]


def eligible(slots: list[Slot], gpus: int, gpu_type: str) -> list[Slot]:
    """The slots of one host that a job asking for ``gpus`` GPUs of ``gpu_type`` may take, free or
    not: GPU slots for a GPU job on a host with GPUs, else CPU slots (on a host without GPUs they
    stand in for GPUs, of the type they are labelled with)."""
    if gpus > 0 and any(s.gpu for s in slots):
        return [s for s in slots if s.gpu is not None and type_matches(s, gpu_type)]
    return [s for s in slots if s.gpu is None and (gpus == 0 or type_matches(s, gpu_type))]


def wanted_slots(slots: list[Slot], gpus: int, cores: int = 1, gpu_type: str = "any") -> int:
    """How many of a host's slots a job asking for ``gpus`` GPUs and ``cores`` CPU cores takes: one
    per GPU where there are GPUs, else CPU slots enough for its cores (an evaluation's two, where
    each CPU slot has one: tasks.harness.cores), as many as the host has at most. Slots that are
    not pinned have no cores of their own to add: one."""
    if gpus > 0 and any(s.gpu for s in slots):
        return gpus
    cpu = eligible(slots, gpus, gpu_type)
    each = min((len(s.cpus) for s in cpu), default=0)
    if each == 0:
        return 1
    return max(1, min(-(-cores // each), len(cpu)))


def pick(slots: list[Slot], usable: set[str], gpus: int, gpu_type: str, cores: int = 1) -> list[Slot] | None:
    """The slots a job takes now, of those named in ``usable`` (free, not drained); None if too few."""
    need = wanted_slots(slots, gpus, cores, gpu_type)
    chosen = [s for s in sorted(eligible(slots, gpus, gpu_type), key=lambda s: s.name) if s.name in usable][:need]
    return chosen if len(chosen) == need else None


def drained_for(slots: list[Slot], drained: dict[str, str], gpus: int, gpu_type: str, cores: int = 1) -> str:
    """Why a job asking for ``gpus`` GPUs of ``gpu_type`` cannot run on these slots however long it
    waits: the drained ones it would need, each with its reason ("" when enough are in service)."""
    candidates = eligible(slots, gpus, gpu_type)
    if len([s for s in candidates if s.name not in drained]) >= wanted_slots(slots, gpus, cores, gpu_type):
        return ""
    return "; ".join(f"{s.name} drained ({drained[s.name]})" for s in candidates if s.name in drained)


def slot_types(slots: list[Slot]) -> list[str]:
    return sorted({s.type for s in slots if s.type}) or ["no typed GPU"]


class Placement(Protocol):
    def check(self, gpus: int, gpu_type: str = "any") -> None: ...
    def try_acquire(self, gpus: int, gpu_type: str = "any", cores: int = 1) -> Lease | None: ...
    def release(self, lease: Lease) -> None: ...
    def drain(self, slot_name: str, reason: str) -> None: ...
    def blocked(self, gpus: int, gpu_type: str = "any", cores: int = 1) -> str: ...
    def describe(self) -> dict[str, object]: ...
    def slot_leases(self) -> list[Lease]: ...


@dataclass
class LeasePool:
    """Slots on this host. GPU jobs take GPU slots; jobs asking for no GPU take CPU slots."""

    gpus: list[GpuInfo]
    cpu_slots: int
    #: the type a job's ``gpu_type`` matches on this host's CPU slots ("": none; a CPU-only cluster
    #: host that stands in for a GPU type, as the tests' hosts do)
    cpu_slot_type: str = ""
    _free: set[str] = field(default_factory=set)
    _drained: dict[str, str] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    cores: list[int] = field(default_factory=lambda: sorted(os.sched_getaffinity(0)))

    def __post_init__(self) -> None:
        shares = iter(split_cores(self.cores, len(self.gpus) + self.cpu_slots))
        self._slots = {f"gpu{g.index}": Slot(f"gpu{g.index}", g, next(shares), gpu_type(g.name)) for g in self.gpus}
        self._slots.update(
            {f"cpu{i}": Slot(f"cpu{i}", None, next(shares), self.cpu_slot_type) for i in range(self.cpu_slots)}
        )
        self._free = set(self._slots)

    def check(self, gpus: int, gpu_type: str = "any") -> None:
        """Refuse at submit time what this host can never run."""
        if gpus > max(len(self.gpus), 1):  # on a host with none, a job asking for one runs on a CPU slot
            has = f"{len(self.gpus)}" if self.gpus else "none (a job asking for one runs on a CPU slot)"
            raise BadRequest(f"the job asks for {gpus} GPUs; this server has {has}")
        if not self.gpus and self.cpu_slots < 1:
            raise BadRequest("this server has no GPUs and no CPU slots")
        slots = self.slots()
        if len(eligible(slots, gpus, gpu_type)) < wanted_slots(slots, gpus):
            raise BadRequest(f"the job asks for GPU type {gpu_type}; this server has {', '.join(slot_types(slots))}")

    def try_acquire(self, gpus: int, gpu_type: str = "any", cores: int = 1) -> Lease | None:
        with self._lock:
            chosen = pick(self.slots(), self._free - set(self._drained), gpus, gpu_type, cores)
            if chosen is None:
                return None
            self._free -= {s.name for s in chosen}
            return Lease(tuple(chosen))

    def take(self, names: list[str]) -> Lease | None:
        """Exactly the slots ``names`` (a cluster front end chose them), or None when one is busy,
        drained or unknown."""
        with self._lock:
            wanted = set(names)
            if not names or not wanted <= self._free - set(self._drained) or not wanted <= set(self._slots):
                return None
            self._free -= wanted
            return Lease(tuple(self._slots[n] for n in names))

    def release(self, lease: Lease) -> None:
        with self._lock:
            self._free |= {s.name for s in lease.slots}

    def slots(self) -> list[Slot]:
        """Every slot of this host, drained or not, by name."""
        return [slot for _, slot in sorted(self._slots.items())]

    def slot_leases(self) -> list[Lease]:
        """Each slot that is not drained as a lease of its own (what a one-slot job would get)."""
        with self._lock:
            return [Lease((slot,)) for name, slot in sorted(self._slots.items()) if name not in self._drained]

    def drain(self, slot_name: str, reason: str) -> None:
        with self._lock:
            self._drained[slot_name] = reason

    def blocked(self, gpus: int, gpu_type: str = "any", cores: int = 1) -> str:
        """Why such a job waits for a slot that is drained ("" when it only waits its turn)."""
        return drained_for(self.slots(), self.drained(), gpus, gpu_type, cores)

    def drained(self) -> dict[str, str]:
        """Slot name -> why it takes no more jobs."""
        with self._lock:
            return dict(self._drained)

    def describe(self) -> dict[str, object]:
        with self._lock:
            return {
                "slots": sorted(self._slots),
                "cpus": {n: ",".join(map(str, s.cpus)) or "not pinned" for n, s in sorted(self._slots.items())},
                "free": sorted(self._free - set(self._drained)),
                "drained": dict(self._drained),
            }
