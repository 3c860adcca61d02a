"""Which cores of an evaluation's lease each party runs on.

The candidate's container never shares a core with the judge's processes, nor the judge's with it
(but for the keeper of the candidate's core, below, which times nothing): the server gives each
container a cpuset for its whole life (tasks.evaluate). Whatever the candidate arms on its core
(timers, epoll fan-outs, io_uring timeouts, signals) fires there and stalls only its own calls (and
its keeper), and the scheduler cannot run it beside the baseline.

| cores in the lease | supervisor  | baseline's and empty call's workers | candidate's container |
|--------------------|-------------|-------------------------------------|-----------------------|
| 3 or more          | the quietest| the second quietest                 | the third quietest    |
| 2                  | the quietest| the quietest                        | the other             |
| 1, or not pinned   | -           | -                                   | every core (shared)   |

Quietest: the least share of its time since boot taken by interrupts, softirqs and the hypervisor
(steal), from /proc/stat, in steps of NOISE_STEP (cores within a step rank by number, so that a
slot's layout, and its A/A calibration, stay the same from one request to the next). A host routes
its devices' interrupts to a few cores: on the H200 host the judge, on cores 0 and 1 of its lease,
lost 380-910 ms of each ~9 s timed to them while the candidate's core 2 lost 10-70 ms, and the
baseline's calls with them (bench/results/gpu-host-issue29/diagnostic/cores.txt).

The candidate gets one core, and so does the baseline's worker (started on it: a thread pool such
as OpenMP's is sized to one core on both sides), so neither times on more cores than the other.
The supervisor's processes have every core but the candidate's (its warm-up compiles use them);
its container has the candidate's too, for one process alone: the keeper of that core
(tasks.harness.keeper), which keeps a timed worker's core awake and flushes its caches before each
call made there, on every timed core but the supervisor's (``kept``).
With three cores or more every timed call, the baseline's, the candidate's and the empty one, is
answered across cores the same way (the supervisor's message wakes a process on another core);
with two, the judge's calls stay on the supervisor's core while the candidate's cross to its own,
and the keeper makes the candidate's core what the supervisor makes its own: awake, just flushed.
With one the candidate cannot be kept apart: the evaluation is not scored (tasks.evaluate). The
server takes two CPU slots for an evaluation where CPU slots have one core each (runner.leases,
protocol.models.EVAL_CORES).

Pure and stdlib-only: the server computes the layout, the supervisor gets it in its argv.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

#: shares of time lost to the host that differ by less than this rank the same (see the docstring)
NOISE_STEP = 0.005
#: where irq, softirq and steal are among /proc/stat's counters after "cpuN" (user nice system idle
#: iowait irq softirq steal ...: iowait is idle time, not taken from anyone); user, nice and system are
#: the time the core ran processes (a guest's time is inside user)
_USER, _NICE, _SYSTEM, _IRQ, _SOFTIRQ, _STEAL = 0, 1, 2, 5, 6, 7


class CoreTicks(NamedTuple):
    """One core's clock ticks since boot (/proc/stat)."""

    #: taken by interrupts, softirqs and steal
    lost: int
    #: running processes, any process (user, nice, system)
    busy: int
    #: in all
    total: int


@dataclass(frozen=True)
class CoreLayout:
    #: the supervisor's core, and the trusted workers' (None: not pinned, the lease could not be split)
    supervisor: int | None
    workers: int | None
    #: the candidate container's cpuset: one core (every core of the lease when it could not be split)
    candidate: tuple[int, ...]
    #: the cores the supervisor's own processes use: the lease's cores but the candidate's
    trusted: tuple[int, ...] = ()

    @property
    def separated(self) -> bool:
        """Whether the candidate's cores hold none of the judge's."""
        return self.supervisor is not None and self.workers is not None and bool(self.candidate)

    @property
    def only_candidate_crosses(self) -> bool:
        """Whether the candidate's calls cross to a core of their own while the baseline's stay on the
        supervisor's (a lease of 2 cores): a cost of the candidate's position that one request cannot
        see (tasks.calibration takes it off once the slot is calibrated)."""
        return self.separated and self.supervisor == self.workers

    @property
    def candidate_core(self) -> int | None:
        """The candidate's core (None: the lease could not be split)."""
        return self.candidate[0] if self.separated else None

    @property
    def kept(self) -> tuple[int, ...]:
        """The cores a keeper holds while a case is timed (tasks.harness.keeper): each timed worker's
        core but the supervisor's own."""
        if not self.separated:
            return ()
        return tuple(c for c in dict.fromkeys((self.workers, self.candidate_core)) if c not in (None, self.supervisor))

    @property
    def container(self) -> tuple[int, ...]:
        """The supervisor container's cpuset: its own processes' cores and its keepers'."""
        return tuple(sorted({*self.trusted, *self.kept}))

    @property
    def judge(self) -> frozenset[int]:
        return frozenset(c for c in (self.supervisor, self.workers) if c is not None)

    def wire(self) -> str:
        """``S:W:C``, or ``-`` when the lease could not be split (the supervisor's argv: what it pins
        where while a case is timed)."""
        if not self.separated:
            return "-"
        return f"{self.supervisor}:{self.workers}:{self.candidate_core}"


def cpu_ticks(stat: str) -> dict[int, CoreTicks]:
    """Per core, its clock ticks from the text of /proc/stat, each a counter since boot."""
    out = {}
    for line in stat.splitlines():
        fields = line.split()
        if not fields or not fields[0].startswith("cpu") or fields[0] == "cpu":
            continue
        try:
            core, ticks = int(fields[0][3:]), [int(f) for f in fields[1:9]]
        except ValueError:
            continue
        if len(ticks) == 8:
            lost = ticks[_IRQ] + ticks[_SOFTIRQ] + ticks[_STEAL]
            out[core] = CoreTicks(lost, ticks[_USER] + ticks[_NICE] + ticks[_SYSTEM], sum(ticks))
    return out


def lost_shares(stat: str) -> dict[int, float]:
    """Per core, the share of its time since boot taken by interrupts, softirqs and steal, from the
    text of /proc/stat (a core with no time yet is left out)."""
    return {core: t.lost / t.total for core, t in cpu_ticks(stat).items() if t.total > 0}


def split(cores: Sequence[int], lost: Mapping[int, float] | None = None) -> CoreLayout:
    """The layout for a lease's cores (empty: its slots are not pinned), as the table above; ``lost``:
    :func:`lost_shares` of the host (None: the cores in their numbers' order)."""
    quiet = lost or {}
    ordered = sorted(set(cores), key=lambda c: (int(quiet.get(c, 0.0) / NOISE_STEP), c))
    if len(ordered) >= 3:
        return CoreLayout(ordered[0], ordered[1], (ordered[2],), (ordered[0], ordered[1], *ordered[3:]))
    if len(ordered) == 2:
        return CoreLayout(ordered[0], ordered[0], (ordered[1],), (ordered[0],))
    return CoreLayout(None, None, tuple(ordered), tuple(ordered))


def parse(text: str) -> CoreLayout:
    """The layout from :meth:`CoreLayout.wire`; ValueError for anything else."""
    if text == "-":
        return CoreLayout(None, None, ())
    supervisor, workers, candidate = text.split(":")
    layout = CoreLayout(int(supervisor), int(workers), (int(candidate),))
    if not layout.separated or layout.judge & set(layout.candidate):
        raise ValueError(f"a core layout whose candidate shares the judge's cores: {text!r}")
    return layout
