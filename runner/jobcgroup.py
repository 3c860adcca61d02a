"""An evaluation's containers' parent cgroup, with the largest CPU weight the kernel allows.

A slot's cores are leased to one job at a time, but the host's own processes (a build, a busy loop,
the engine) are not pinned away from them: the scheduler runs them on a leased core whenever it likes,
inside an evaluation's timed calls. On a 2-core host two busy loops ran on the submission's core
during 54-82% of its timed calls, and every A/A evaluation of the CPU demo ended inconclusive.
Under a parent cgroup of maximal weight (cgroup v1 ``cpu.shares`` 262144, v2 ``cpu.weight`` 10000:
256 and ~100 times a host process's default), host work yields a leased core to the job while the
job has work on it, and takes it when the job sleeps (host work is not shut out, it waits).
Evaluations only (plan.ContainerStep.timed): their timed calls are what host work must not reach,
and the judge's deadline bounds how long they hold the cores; a python job spinning on every slot
must not starve the server and the engine that answer its clients.

The engine's cgroupfs driver only: with systemd's driver a parent must be a systemd slice whose
weight systemd owns; the engine's default parent is kept there, and the reason says so. Where the
folder cannot be made or written (not root, no cpu controller), the same: the default parent and
why.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

#: cgroup v1's largest cpu.shares and v2's largest cpu.weight
V1_SHARES_MAX = 262144
V2_WEIGHT_MAX = 10000
CGROUP_ROOT = Path("/sys/fs/cgroup")
#: the parent is one folder under the cgroup root: a path ("../x", "/tmp/x") would be made and written elsewhere
JOB_CGROUP_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")
JOB_CGROUP_RULE = "one folder name of letters, digits, '.', '_' and '-'"


@dataclass(frozen=True)
class JobCgroup:
    """Where job containers' cgroups go (``parent``: docker's ``cgroup_parent``, "" for the engine's
    default) and what was set there, or why nothing was."""

    parent: str = ""
    weight: str = ""
    reason: str = ""

    def describe(self) -> str:
        """One line for /v1/health and ``kcoral doctor``."""
        if self.parent:
            return f"evaluations under cgroup {self.parent}, {self.weight}: host processes yield the leased cores"
        return (
            f"evaluations under the engine's default cgroup ({self.reason}): host processes compete for the "
            "leased cores"
        )


def prepare(name: str, version: str, driver: str, root: Path = CGROUP_ROOT) -> JobCgroup:
    """Make the parent cgroup ``name`` (cgroup ``version`` "1" or "2", the engine's ``driver``) and give
    it the largest CPU weight; "" for ``name`` keeps the engine's default parent."""
    if not name:
        return JobCgroup(reason="--job-cgroup is empty")
    if not JOB_CGROUP_NAME.fullmatch(name):
        return JobCgroup(reason=f"--job-cgroup {name!r} is not {JOB_CGROUP_RULE}")
    if driver != "cgroupfs":
        return JobCgroup(reason=f"the engine's cgroup driver is {driver or 'unknown'}, not cgroupfs")
    if version == "1":
        folder, knob, value = _v1_cpu(root) / name, "cpu.shares", V1_SHARES_MAX
    elif version == "2":
        if "cpu" not in _words(root / "cgroup.controllers"):
            return JobCgroup(reason="the cgroup v2 root has no cpu controller")
        folder, knob, value = root / name, "cpu.weight", V2_WEIGHT_MAX
    else:
        return JobCgroup(reason=f"cgroup version {version or 'unknown'}")
    try:
        if version == "2" and "cpu" not in _words(root / "cgroup.subtree_control"):
            (root / "cgroup.subtree_control").write_text("+cpu")
        folder.mkdir(exist_ok=True)
        (folder / knob).write_text(str(value))
        if _words(folder / knob) != [str(value)]:
            return JobCgroup(reason=f"{folder / knob} did not take {value}")
    except OSError as exc:
        return JobCgroup(reason=f"cannot set {folder / knob}: {exc.strerror or exc}")
    return JobCgroup(parent=f"/{name}", weight=f"{knob} {value}")


def pressure_stalls(version: str, root: Path = CGROUP_ROOT) -> bool:
    """Whether this host's kernel keeps each cgroup's CPU pressure stalls, ``full`` among them (cgroup v2
    with PSI, kernel 5.13 or later): an evaluation's judge then reads exactly how long others held the
    candidate up (tasks.harness.cpuwatch.HeldWatch); elsewhere its core's busy clock ticks stand for it,
    and a waiting call's upper bound rises by their noise (1-3% on an H100)."""
    return version == "2" and "full" in _words(root / "cpu.pressure")


def _v1_cpu(root: Path) -> Path:
    """cgroup v1's cpu hierarchy (mounted alone or with cpuacct)."""
    for name in ("cpu", "cpu,cpuacct", "cpuacct,cpu"):
        if os.path.isdir(root / name):
            return root / name
    return root / "cpu"


def _words(path: Path) -> list[str]:
    try:
        return path.read_text().split()
    except OSError:
        return []
