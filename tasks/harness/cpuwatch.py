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

import contextlib
import re
import statistics
from pathlib import Path

MOUNT = Path("/kcoral-cgroups")
_LEAF = re.compile(r"[A-Za-z0-9._@-]{1,255}")


class CpuWatch:
    def __init__(self, counter: Path, unit_ns: int, parse: str) -> None:
        self.counter, self.unit_ns, self.parse = counter, unit_ns, parse
        #: the last reading: what the container used in all once its cgroup is gone
        self.last: int | None = None

    def ns(self) -> int:
        """CPU nanoseconds the candidate's container has used so far. Once its cgroup is gone (every
        process of the container has exited, and the runtime removed it: a populated cgroup cannot be
        removed, and the candidate cannot reach the host's) it uses no more: the last reading. A counter
        never read is an error (FileNotFoundError): a watch that never saw its counter watches nothing."""
        try:
            text = self.counter.read_text()
        except FileNotFoundError:
            if self.last is None:
                raise
            return self.last
        self.last = self._parse(text)
        return self.last

    def _parse(self, text: str) -> int:
        if self.parse == "ns":  # cgroup v1's cpuacct.usage: one number
            return int(text.strip()) * self.unit_ns
        if self.parse != "usage_usec":
            raise ValueError(f"no reader for {self.parse!r}")
        for line in text.splitlines():  # cgroup v2's cpu.stat: "key value" lines
            key, _, value = line.partition(" ")
            if key == "usage_usec":
                return int(value) * self.unit_ns
        raise ValueError(f"{self.counter} has no usage_usec")


def _folder(leaf: str, mount: Path) -> Path:
    if not _LEAF.fullmatch(leaf) or leaf in (".", ".."):
        raise ValueError(f"unexpected cgroup folder {leaf!r}")
    return mount / leaf


def for_leaf(leaf: str, version: str, mount: Path = MOUNT) -> CpuWatch:
    """The watch over the container cgroup ``leaf`` (its folder under MOUNT, cgroup ``version`` "1"
    or "2"), or ValueError."""
    folder = _folder(leaf, mount)
    if version == "2":
        return CpuWatch(folder / "cpu.stat", 1000, "usage_usec")
    if version == "1":
        return CpuWatch(folder / "cpuacct.usage", 1, "ns")
    raise ValueError(f"no cgroup v{version} CPU accounting")


class HeldWatch:
    """Nanoseconds so far that the candidate container's processes were held up by others, exactly: the
    kernel's pressure stall totals of its cgroup (cgroup v2 PSI, microseconds), ``full`` of CPU (every
    runnable process of the container waiting for a core someone else had) and of IRQ (its running
    process interrupted: the host's interrupts and softirqs served on its core).

    What took the candidate's core from its calls, where the core's own clock ticks
    (:meth:`tasks.harness.interference.JudgeWatch.busy_ms`, 10 ms each) say only that others ran there,
    less the candidate's own CPU: on an idle H100 host a GPU call of 3.3 ms read 19 ms of others' work
    over 38 batches, noise of the ticks, and the interval's upper bound rose 1-3% for it
    (tasks.harness.stats.others_slack). ``full``, not ``some``: a process of the candidate's own waiting
    while another of its runs is not held up by anyone. Work the candidate makes the host do on its core
    can still raise these totals: they only ever widen its interval upwards or leave the workload
    unscored, never gain it anything."""

    def __init__(self, files: list[Path]) -> None:
        self.files = files
        self.last = 0

    def ns(self) -> int:
        """The totals so far; once the cgroup is gone (its processes exited), the last reading."""
        with contextlib.suppress(OSError, ValueError):
            self.last = sum(_stall_us(f.read_text()) for f in self.files) * 1000
        return self.last


def _stall_us(text: str) -> int:
    """The ``full`` line's ``total=`` (microseconds) of a pressure file, or ValueError."""
    for line in text.splitlines():
        kind, *fields = line.split()
        if kind == "full":
            for field in fields:
                key, _, value = field.partition("=")
                if key == "total":
                    return int(value)
    raise ValueError(f"no full stall total in {text[:200]!r}")


def held_for_leaf(leaf: str, version: str, mount: Path = MOUNT) -> HeldWatch | None:
    """The container cgroup ``leaf``'s :class:`HeldWatch` (of CPU alone where the kernel keeps no IRQ
    stalls), or None where it keeps no CPU ``full`` stalls for it (cgroup v1, no PSI, a kernel before
    5.13). ValueError for a leaf that is no folder name."""
    folder = _folder(leaf, mount)
    cpu, irq = folder / "cpu.pressure", folder / "irq.pressure"
    if version != "2" or not _stalls(cpu):
        return None
    return HeldWatch([cpu, irq] if _stalls(irq) else [cpu])


def _stalls(path: Path) -> bool:
    """Whether the pressure file at ``path`` reads, with a ``full`` stall total."""
    try:
        _stall_us(path.read_text())
    except (OSError, ValueError):
        return False
    return True


def outside_calls(gaps: list[tuple[int, int]], baseline_ms: float) -> dict[str, float]:
    """The candidate's CPU use outside its calls over a case's timed calls, from ``gaps`` (per call, ns
    it used since its previous call, and while its inputs were being written before it began): the
    median of each in ms, and each total as a share of ``baseline_ms``, the baseline's total call
    time (load that would slow the baseline's calls)."""
    between = [g[0] / 1e6 for g in gaps]
    early = [g[1] / 1e6 for g in gaps]
    total = max(baseline_ms, 1e-9)
    return {
        "idle_cpu_ms": statistics.median(between) if between else 0.0,
        "idle_cpu_share": sum(between) / total,
        "early_cpu_ms": statistics.median(early) if early else 0.0,
        "early_cpu_share": sum(early) / total,
    }


def outside_flags(name: str, figures: dict[str, float], limit_ms: float, share: float) -> list[str]:
    """What :func:`outside_calls`'s ``figures`` for workload ``name`` flag: a median above ``limit_ms``
    or a total above ``share`` of the baseline's time, between calls or before them."""
    flags = []
    if figures["idle_cpu_ms"] > limit_ms or figures["idle_cpu_share"] > share:
        flags.append(
            f"{name}: the candidate's processes used CPU between its calls (median {figures['idle_cpu_ms']:.3f} ms "
            f"per gap, {figures['idle_cpu_share']:.1%} of the baseline's time; limits {limit_ms} ms, {share:.0%}): "
            "work outside its timed calls"
        )
    if figures["early_cpu_ms"] > limit_ms or figures["early_cpu_share"] > share:
        flags.append(
            f"{name}: the candidate's processes used CPU while their inputs were being written, before their call "
            f"began (median {figures['early_cpu_ms']:.3f} ms, {figures['early_cpu_share']:.1%} of the baseline's "
            "time)"
        )
    return flags


def shared_core(windows: list[tuple[float, float]]) -> tuple[float, float]:
    """Others' work on the candidate's core over its calls (tasks.harness.callwatch), from ``windows`` (per
    call: ms others' work held the candidate up or ran on its core, ms the call's window lasted): (ms in
    all, never below 0: the core's clock ticks, where they stand for it, are coarse, share of the
    windows' time)."""
    ms = max(0.0, sum(w[0] for w in windows))
    return ms, ms / max(sum(w[1] for w in windows), 1e-9)


def shared_core_over(ms: float, share: float, share_limit: float, ms_limit: float) -> bool | None:
    """Whether others' work on the candidate's core (:func:`shared_core`) is over the method's limits: True
    (the workload is not scored), False, or None while undecided: over the share in fewer ms than a refusal
    stands on (the core's clock ticks are coarse), so the measurement must not stop yet."""
    if share <= share_limit:
        return False
    return True if ms >= ms_limit else None
