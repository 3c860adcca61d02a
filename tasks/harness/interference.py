"""What the kernel bills to nobody on the judge's side, measured by the supervisor per iteration.

The candidate is kept off the judge's cores (tasks.harness.cores), but the host can still slow a
trusted call in ways no process is billed for: another process scheduled on a judge core (the
trusted process waits on the run queue), or interrupt and softirq work served there. Either
stretches the baseline's time, or the supervisor's clock around any call, and would read as a
gain for the candidate. So around each iteration (a baseline, a candidate and an empty call) the
supervisor reads:
- around each call, ``run_delay`` (``/proc/PID/schedstat``, ns spent runnable but not running:
  preemption and wake-up latency) of the trusted worker it calls, and its own unless it shares that
  worker's core (two-core leases: there the worker runs while the supervisor waits its turn by design);
- around each iteration, interrupt, softirq and steal time (a virtual machine's core taken by its
  hypervisor) of the judge's cores (``/proc/stat``, in clock ticks: a tick of it is 10 ms, so any is
  a disturbance). The same figures for the candidate's core go to the judge's log per workload.
An iteration whose sum is over the method's limit is disturbed, and the estimate leaves it out
(tasks.harness.stats). Only trusted processes and judge cores count: nothing the candidate can
raise decides which of its own samples are kept.

The candidate's core can be taken the same way, by the host's other work (an unpinned process the
scheduler moves to the lease's least busy core, which is the candidate's: the supervisor's core
never sleeps while a case is timed), and that slows only the candidate: a false loss, or with a
floor calibrated on a quiet host, an interval that misses. Around each candidate call the
supervisor reads the time that core ran processes (``/proc/stat``'s user, nice and system) less the
candidate container's own CPU time: what remains ran someone else's work on its core
(:meth:`JudgeWatch.busy_ms`). Since the candidate can raise that too (kernel threads it sets to
work), it decides no sample: a workload whose candidate calls shared their core over a limit is
not scored at all (tasks.report), which gains the candidate nothing.

The files are opened once and read with ``pread`` (no path lookup per read); this runs in the
supervisor's PID namespace, where the candidate has no process (it has its own).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from kcoral.tasks.harness.cores import CoreTicks, cpu_ticks

_TICK_MS = 1000.0 / os.sysconf("SC_CLK_TCK")


@dataclass
class JudgeWatch:
    #: the trusted processes by name ("supervisor", and each trusted worker's name)
    pids: dict[str, int]
    cores: frozenset[int]

    def __post_init__(self) -> None:
        self._sched = {
            name: os.open(f"/proc/{pid}/schedstat", os.O_RDONLY | os.O_CLOEXEC) for name, pid in self.pids.items()
        }
        self._stat = os.open("/proc/stat", os.O_RDONLY | os.O_CLOEXEC)

    def waited_ms(self, names: Iterable[str]) -> float:
        """Milliseconds, so far, these trusted processes waited for a CPU (a counter: the difference
        across a call is what counts)."""
        waited = 0
        for name in names:
            try:
                waited += int(os.pread(self._sched[name], 256, 0).split()[1])
            except (OSError, IndexError, ValueError):  # a worker that exited: its wait no longer grows
                continue
        return waited / 1e6

    def irq_ms(self) -> float:
        """Milliseconds, so far, the judge's cores served interrupts and softirqs or were taken by the
        hypervisor (steal: a virtual machine's core running nothing of ours), a counter."""
        if not self.cores:
            return 0.0
        lost = self.lost_ms()
        return sum(lost.get(c, 0.0) for c in self.cores)

    def lost_ms(self) -> dict[int, float]:
        """Per core of the host: milliseconds so far of interrupts, softirqs and steal (a counter)."""
        return {core: t.lost * _TICK_MS for core, t in self._ticks().items()}

    def busy_ms(self, core: int) -> float:
        """Milliseconds so far that ``core`` ran processes, anyone's (a counter, in clock ticks of 10 ms:
        over many calls a sum of differences is what counts)."""
        ticks = self._ticks().get(core)
        return ticks.busy * _TICK_MS if ticks is not None else 0.0

    def _ticks(self) -> dict[int, CoreTicks]:
        if self._stat < 0:
            return {}
        return cpu_ticks(os.pread(self._stat, 1 << 20, 0).decode(errors="replace"))

    def close(self) -> None:
        for fd in [*self._sched.values(), self._stat]:
            if fd >= 0:
                os.close(fd)
        self._sched, self._stat = {}, -1


def disturbed(
    waits_ms: Iterable[float],
    calls_ms: Iterable[float],
    limit_ms: float,
    share: float,
    slowed: Sequence[float] = (),
) -> list[bool]:
    """Per iteration: whether its judge-side wait is over the larger of ``limit_ms`` and ``share``
    of its shorter call (``calls_ms``: per iteration, the shorter of the baseline's and the candidate's),
    or the GPU slowed itself during it (``slowed``: per iteration, above 0 when it did:
    tasks.harness.gpuclock; missing entries: it did not)."""
    marks = [w > max(limit_ms, share * c) for w, c in zip(waits_ms, calls_ms, strict=True)]
    return [m or (i < len(slowed) and slowed[i] > 0) for i, m in enumerate(marks)]


def busy_gpu(
    probe: Callable[[], float],
    limit_ms: float,
    rounds: int = 100,
    per_round: int = 3,
    pause: Callable[[float], None] = time.sleep,
) -> float | None:
    """Wait until the GPU answers as an idle one does: None once the fastest ``probe()`` (ms for one tiny
    kernel and a device-wide synchronize) so far is under ``limit_ms`` (at once: no more probes), probing
    ``per_round`` times a round with a 2 ms pause between rounds; after ``rounds`` the fastest probe's ms
    (another context kept it busy all along)."""
    fastest = math.inf
    for _ in range(rounds):
        for _ in range(per_round):
            fastest = min(fastest, probe())
            if fastest < limit_ms:
                return None
        pause(0.002)
    return fastest
