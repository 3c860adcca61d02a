"""The candidate container's CPU time, read by the supervisor from the kernel's cgroup accounting.

The candidate may use the CPU only while one of its calls is being timed (and during its setup).
Work anywhere else would be work the clock does not see (precomputing while the supervisor writes
the next inputs) or load that slows the baseline's calls, so the supervisor reads this counter
around every call and flags what the candidate used outside them. The counter covers every
process in the candidate's container, threads and exited children included.

The server mounts the host's directory of container cgroups read-only at MOUNT; the candidate's
own cgroup is found from its worker's pid (the kernel's SO_PEERCRED on the channel, in the shared
PID namespace), so nothing the candidate says decides which counter is read.
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
        if self.parse == "usage_usec":
            for line in text.splitlines():
                key, _, value = line.partition(" ")
                if key == "usage_usec":
                    return int(value) * self.unit_ns
            raise ValueError(f"{self.counter} has no usage_usec")
        return int(text.strip()) * self.unit_ns


def for_pid(pid: int, version: str, mount: Path = MOUNT) -> CpuWatch:
    """The watch over the cgroup that holds ``pid`` (cgroup ``version`` "1" or "2"), or ValueError."""
    lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if version == "2" and controllers == "":
            leaf = _leaf(path)
            return CpuWatch(mount / leaf / "cpu.stat", 1000, "usage_usec")
        if version == "1" and "cpuacct" in controllers.split(","):
            leaf = _leaf(path)
            return CpuWatch(mount / leaf / "cpuacct.usage", 1, "ns")
    raise ValueError(f"no cgroup v{version} CPU accounting for pid {pid}")


def _leaf(path: str) -> str:
    """The container's own cgroup directory name: the last component of its path."""
    leaf = path.rstrip("/").rsplit("/", 1)[-1]
    if not _LEAF.fullmatch(leaf) or leaf in (".", ".."):
        raise ValueError(f"unexpected cgroup path {path!r}")
    return leaf
