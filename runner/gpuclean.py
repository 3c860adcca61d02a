"""After a job: what it left on its GPUs (a process, memory not given back). The scheduler drains
such a GPU; so does a cluster host's agent (runner.cluster.hostagent) for the jobs it runs."""

from __future__ import annotations

import time
from typing import Protocol

from kcoral.runner.gpus import GpuUsage
from kcoral.runner.leases import Lease


class GpuProbe(Protocol):
    """What is read of a GPU (runner.gpus.Nvml; tests use their own)."""

    def usage(self, index: int) -> GpuUsage | None: ...

    def telemetry(self, index: int) -> dict[str, float] | None: ...


def usage_before(probe: GpuProbe, lease: Lease) -> dict[int, GpuUsage | None]:
    """Each leased GPU's usage before the job: what :func:`leftovers` compares with."""
    return {g.index: probe.usage(g.index) for g in lease.gpus}


def leftovers(
    probe: GpuProbe, lease: Lease, before: dict[int, GpuUsage | None], slack_mib: int, tries: int = 20
) -> dict[int, str]:
    """GPU index -> what the job left there, for each leased GPU that is not clean, each asked a few
    times over 2 s (a process on it, or memory in use past ``slack_mib`` over ``before``)."""
    return {
        g.index: reason
        for g in lease.gpus
        if (reason := _leftover(probe, g.index, before.get(g.index), slack_mib, tries))
    }


def _leftover(probe: GpuProbe, index: int, before: GpuUsage | None, slack_mib: int, tries: int) -> str:
    reason = ""
    for _ in range(tries):
        after = probe.usage(index)
        if after is None or before is None:
            return ""
        if after.processes:
            reason = f"processes {list(after.processes)} still on GPU {index} after the job"
        elif after.memory_used_mib > before.memory_used_mib + slack_mib:
            reason = (
                f"GPU {index} memory in use {after.memory_used_mib} MiB after the job, "
                f"{before.memory_used_mib} MiB before"
            )
        else:
            return ""
        time.sleep(0.1)
    return reason
