"""What the supervisor reads around every call it times, and keeps for the measurement's checks:

- the candidate container's CPU time between its calls and while its inputs are written (``gaps``:
  tasks.harness.cpuwatch.outside_calls flags work done outside its own calls). The container's counter
  moves only at the scheduler's ticks and switches: a process that works while the inputs are written and
  is switched out only when the call's worker takes the core shows that work later, in the call. On a
  candidate of one core the call cannot use more CPU than its wall time, so what the counter shows for the
  call beyond that is early work too (a forked helper working then scored 1.07-1.15x unseen);
- others' work on the candidate's core during its calls (``shared``: tasks.harness.cpuwatch.shared_core;
  over the method's limits the workload is not scored): where the kernel keeps them, the time its
  processes were held up (tasks.harness.cpuwatch.HeldWatch), exactly; elsewhere the core's busy time
  less the candidate's own and its core's keeper's (tasks.harness.keeper), in clock ticks;
- the trusted side's unbilled waits for a CPU during the calls of the iteration being timed
  (``waited``: tasks.harness.interference; a disturbed iteration is left out).

One :class:`Window` per call: :meth:`CallWatch.open` before its inputs are written, :meth:`written` once
they are, :meth:`judging` just before the clock starts and :meth:`close` once the outputs are held.
The counters are the ones given (tasks.harness.cpuwatch.CpuWatch, tasks.harness.interference.JudgeWatch),
so the bookkeeping is unit-tested on counters of its own (tests/tasks/test_callwatch.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from kcoral.tasks.harness.cores import CoreLayout


class CpuCounter(Protocol):
    def ns(self) -> int: ...


class CoreCounters(Protocol):
    """tasks.harness.interference.JudgeWatch's readings."""

    def waited_ms(self, names: list[str]) -> float: ...

    def busy_ms(self, core: int) -> float: ...

    def irq_ms(self) -> float: ...

    def lost_ms(self) -> dict[int, float]: ...


@dataclass
class Window:
    """One call's readings taken before it."""

    #: the call is the candidate's
    candidate: bool
    #: the candidate container's CPU ns as the window opened
    cpu_opened: int
    #: (ns, ms the candidate's core had run, ms its keeper had, ns the candidate had been held up) as it
    #: opened, the core's and keeper's read only where the held-up time is not kept (0 there): a
    #: candidate's call on a core of its own only
    core_opened: tuple[int, float, float, int] | None
    #: ... once its inputs were written, and the clock then and as its answer came (ns; a candidate's only)
    cpu_written: int = 0
    written_at: int = 0
    answered_at: int = 0
    #: the trusted processes whose waits count against this call, and their waits before it
    watched: list[str] = field(default_factory=list)
    waited_before: float = 0.0


@dataclass
class CallWatch:
    cores: CoreLayout
    #: the trusted side's waits and the cores' time (None where the cores are not separated)
    judge: CoreCounters | None = None
    #: the candidate container's CPU (None until it has joined, or where it cannot be read)
    watch: CpuCounter | None = None
    #: ns the candidate's processes were held up by others (tasks.harness.cpuwatch.HeldWatch; None: its
    #: kernel keeps no such figure, and its core's busy time stands for it)
    held: CpuCounter | None = None
    #: per candidate call: (ns of its CPU since its previous call, ns while its inputs were written)
    gaps: list[tuple[int, int]] = field(default_factory=list)
    #: per candidate call: (ms others' work held it up, or ran on its core where that is not kept; ms the
    #: window lasted)
    shared: list[tuple[float, float]] = field(default_factory=list)
    #: ms the trusted side waited during the calls of the iteration being timed
    waited: float = 0.0
    last_cpu: int = 0
    clock: Callable[[], int] = time.perf_counter_ns
    #: ms the keeper of the candidate's core has run so far (tasks.harness.keeper; None: no keeper):
    #: trusted work, not others' work on that core
    kept: Callable[[], float] | None = None

    def cpu(self) -> int:
        return self.watch.ns() if self.watch is not None else 0

    def kept_ms(self) -> float:
        return self.kept() if self.kept is not None else 0.0

    def settled(self) -> None:
        """The candidate's CPU so far is not a gap's (it joined, or set up: it may work then)."""
        self.last_cpu = self.cpu()

    def measuring(self) -> None:
        """Only the measured calls count from here."""
        self.gaps, self.shared = [], []

    def watched(self, trusted: bool, name: str) -> list[str]:
        """The trusted processes whose waits for a CPU during a call to a worker disturb its time: the
        worker itself if trusted, and the supervisor unless it shares that worker's core (there the
        worker runs while the supervisor waits its turn, by design)."""
        shares = trusted and self.cores.supervisor == self.cores.workers
        return ([name] if trusted else []) + ([] if shares else ["supervisor"])

    def open(self, candidate: bool) -> Window:
        """Before a call's inputs are written."""
        cpu = self.cpu()
        core, judge = self.cores.candidate_core, self.judge
        core_opened = None
        if candidate and judge and core is not None:  # the held-up time, or the core's ticks where it is not kept
            opened = self.clock()
            if self.held is not None:
                core_opened = (opened, 0.0, 0.0, self.held.ns())
            else:
                core_opened = (opened, judge.busy_ms(core), self.kept_ms(), 0)
        return Window(candidate, cpu, core_opened)

    def judging(self, w: Window, watched: list[str]) -> None:
        """Just before the clock starts: the waits of ``watched`` from here are the call's."""
        w.watched = watched
        w.waited_before = self.judge.waited_ms(watched) if self.judge is not None else 0.0

    def written(self, w: Window) -> None:
        """The call's inputs are written (the candidate's CPU until here is while they were)."""
        w.cpu_written = self.cpu()
        if w.candidate:
            w.written_at = self.clock()

    def answered(self, w: Window) -> None:
        """The call's answer has come (its worker's part of the call lies between this and :meth:`written`)."""
        if w.candidate:
            w.answered_at = self.clock()

    def close(self, w: Window) -> None:
        """The call's outputs are held: its waits, its core's other work and its gap are kept."""
        if self.judge is not None:
            self.waited += self.judge.waited_ms(w.watched) - w.waited_before
        cpu_closed = self.cpu()
        core = self.cores.candidate_core
        if w.core_opened is not None and self.judge is not None and core is not None:
            opened, busy_then, kept_then, held_then = w.core_opened
            window_ms = (self.clock() - opened) / 1e6
            if self.held is not None:
                others = (self.held.ns() - held_then) / 1e6
            else:
                busy = self.judge.busy_ms(core) - busy_then - (self.kept_ms() - kept_then)
                others = busy - (cpu_closed - w.cpu_opened) / 1e6
            self.shared.append((others, window_ms))
        if w.candidate:
            early = w.cpu_written - w.cpu_opened + self._beyond_the_call(w, cpu_closed)
            self.gaps.append((w.cpu_opened - self.last_cpu, early))
            self.last_cpu = cpu_closed

    def _beyond_the_call(self, w: Window, cpu_closed: int) -> int:
        """ns the candidate's counter showed from its inputs written to its outputs held beyond the time
        from its inputs written to its answer, where it has one core (0 elsewhere: several cores may run in
        parallel): its worker works on a call only between the two, so the rest was done before the call
        and counted at the switch that let the call's worker run."""
        if self.cores.candidate_core is None or len(self.cores.candidate) != 1:
            return 0
        answered = w.answered_at or self.clock()
        return max(0, cpu_closed - w.cpu_written - (answered - w.written_at))
