"""The candidate container's CPU time, read by the supervisor from the kernel's cgroup accounting.

The candidate may use the CPU only while one of its calls is being timed (and during its setup).
Work anywhere else would be work the clock does not see (precomputing while the supervisor writes
the next inputs) or load that slows the baseline's calls, so the supervisor reads this counter
around every call and flags what the candidate used outside them. The counter covers every
process in the candidate's container, threads and exited children included.

The server mounts the host's directory of container cgroups read-only at MOUNT and, once it has
created the candidate's container, writes that container's cgroup folder name into the channel's
folder (runner.plan.ContainerStep.cgroup_file), where the candidate can only read it: nothing the
candidate says decides which counter is read, and it need not share the supervisor's PID namespace.
The candidate's own container has an empty /sys/fs/cgroup: it cannot watch (inotify) this counter
to learn when the supervisor reads it.
"""

from __future__ import annotations

import re
from pathlib import Path

MOUNT = Path("/kcoral-cgroups")
_LEAF = re.compile(r"[A-Za-z0-9._@-]{1,255}")


class CpuWatch:
    def __init__(self, counter: Path, unit_ns: int, parse: str) -> None:
        self.counter, self.unit_ns, self.parse = counter, unit_ns, parse

    def ns(self) -> int:
        """CPU nanoseconds the candidate's container has used so far."""
        text = self.counter.read_text()
        if self.parse == "ns":  # cgroup v1's cpuacct.usage: one number
            return int(text.strip()) * self.unit_ns
        if self.parse != "usage_usec":
            raise ValueError(f"no reader for {self.parse!r}")
        for line in text.splitlines():  # cgroup v2's cpu.stat: "key value" lines
            key, _, value = line.partition(" ")
            if key == "usage_usec":
                return int(value) * self.unit_ns
        raise ValueError(f"{self.counter} has no usage_usec")


def for_leaf(leaf: str, version: str, mount: Path = MOUNT) -> CpuWatch:
    """The watch over the container cgroup ``leaf`` (its folder under MOUNT, cgroup ``version`` "1"
    or "2"), or ValueError."""
    if not _LEAF.fullmatch(leaf) or leaf in (".", ".."):
        raise ValueError(f"unexpected cgroup folder {leaf!r}")
    if version == "2":
        return CpuWatch(mount / leaf / "cpu.stat", 1000, "usage_usec")
    if version == "1":
        return CpuWatch(mount / leaf / "cpuacct.usage", 1, "ns")
    raise ValueError(f"no cgroup v{version} CPU accounting")
