"""A timed case's measurement: the baseline's, the candidate's and the empty call's workers pinned to
their cores, each side's buffer sets set up and warmed up, then iterations of the three calls on fresh
inputs drawn from the secret key until tasks.harness.sampling says the speedup is known (or a call's
output differs from the baseline's on the same sample), and the operator's record of it. The
:class:`Measuring` half of tasks.harness.supervisor.Supervisor; one call's clock is tasks.harness.timedcall."""

from __future__ import annotations

import contextlib
import gc
import json
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from kcoral.tasks.harness import checks, cpuwatch, memoryfit, pinning, sampling, schema, shared
from kcoral.tasks.harness.cores import CoreLayout
from kcoral.tasks.harness.gpuclock import GpuClock, reasons_text
from kcoral.tasks.harness.link import Worker
from kcoral.tasks.harness.sampling import Samples
from kcoral.tasks.harness.schema import Timing
from kcoral.tasks.harness.stats import median
from kcoral.tasks.harness.timedcall import Calling, Side

#: untimed replays of each side's captured batch before sampling (TimingMethod.graph)
GRAPH_WARMUP = 2
#: a measurement's keeper flushes not done in time (tasks.harness.timedcall) past which it samples no
#: longer for precision (an io_uring storm armed on the candidate's core took 95 s of CI sampling on)
KEEPER_MISSES = 10


@dataclass
class TimedSides:
    """The sides one measurement calls: the baseline's and the candidate's buffer sets (per call: taken
    in turn; in a batch: one per call of the batch) and the empty call's.

    Each of the three in a process of its own, so that every call follows a call made by another
    process. With the null in the baseline's process, a baseline that came first followed its own
    process's call, and the two orders measured apart: on the H200 the KDA template against itself gave
    0.970-0.984x in baseline-first iterations and 0.984-1.002x in the others in five of six requests, and
    13 of 14 requests came out below 1, 0.978-0.994x; with a process of its own, 0.992-1.004x over 15,
    the two orders still apart by up to 2% within a request but either way, which their alternation
    cancels (bench/receipt_samples.py on bench/results/gpu-host-issue12*)."""

    bases: list[Side]
    cands: list[Side]
    null: Side
    #: calls per timed batch; 0: every call timed on its own
    batch: int
    #: each side's batch, and each call alone, is a captured CUDA graph (TimingMethod.graph)
    graphed: bool = False

    def calls(self, i: int, per: int) -> list[tuple[str, list[Side]]]:
        """Iteration ``i``'s calls in order: the baseline ("b") and the candidate ("c") in the order of
        ``i``, then the empty call ("n"); each the sides of one call (``per`` 0) or of a batch."""
        if per:
            b, c = self.bases, self.cands
        else:
            b = [self.bases[sampling.buffer_set(i, len(self.bases))]]
            c = [self.cands[sampling.buffer_set(i, len(self.cands))]]
        return [*sampling.order(i, ("b", b), ("c", c)), ("n", [self.null] * max(per, 1))]


@dataclass
class Measurement:
    """One measurement of a timed case as it goes."""

    case: schema.Case
    #: its samples' labels' prefix (a second measurement draws other inputs)
    label: str
    sides: TimedSides
    tol: checks.Tolerance
    #: the first timed call whose outputs differed from the baseline's on the same sample ("": none)
    mismatch: str = ""
    #: the GPU's slow-down reasons seen in throttled iterations (for the operator's record)
    throttles: int = 0
    #: seconds per part of the iterations (for the operator's record)
    spent: dict[str, float] = field(default_factory=lambda: {"drawing inputs": 0.0, "the calls": 0.0, "comparing": 0.0})
    #: objects in reference cycles freed before its iterations' draws (:meth:`Measuring._iteration`)
    cyclic: int = 0


class TooSlow(Exception):
    """The submission's calls are too slow to be measured before the evaluation's deadline: its case
    FAILs with this reason, at once, instead of the evaluation running out of time."""


class Measuring(Calling):
    """How a timed case is measured (a part of tasks.harness.supervisor.Supervisor, which holds this state
    and gives the cases' sides, their setup and their checks)."""

    mod: Any
    cfg: schema.TimingMethod
    #: the evaluation's deadline (time.time(); 0: none)
    deadline: float
    baseline: Worker | None
    cores: CoreLayout
    clock: GpuClock | None
    #: the GPU's free bytes before the submission's code could run (:meth:`note_free_memory`)
    free_memory: int | None

    # given by the supervisor
    def _candidate(self) -> Worker:
        raise NotImplementedError

    def _progress(self, **where: Any) -> None:
        raise NotImplementedError

    def _progress_again(self) -> None:
        raise NotImplementedError

    def _measure(
        self,
        case: schema.Case,
        cand: Side,
        inputs: dict[str, Any],
        specs: dict[str, tuple[tuple[int, ...], str]],
        tol: checks.Tolerance,
    ) -> tuple[Timing | None, str]:
        """A workload's measurement (:meth:`time_case`), and a second, independent one when the first raised
        a flag (which then stands only if raised again): (its timing, the first mismatch), or (None, why)
        when the submission's setup of a buffer set or the capture of its calls failed."""
        flags = len(self.interference)
        with self._pinned():
            timing, mismatch = self.time_case(case, cand, inputs, specs, tol)
        if timing is None:
            return None, mismatch
        if len(self.interference) > flags and not mismatch:
            # A flag from one measurement may be the host's noise: measure once more, independently
            # (a fresh setup on fresh buffers, samples from other labels of the secret key: nothing
            # of the first measurement is of use), and keep the flag only if it is raised again.
            first = self.interference[flags:]
            del self.interference[flags:]
            self._progress(phase="workload", workload=case.workload, step="timing again")
            again_side = self._side(self._candidate(), case, inputs, specs, label="/again")
            error = self._setup(again_side, case.params, case)
            if error:
                return None, error
            with self._pinned():
                timing, mismatch = self.time_case(case, again_side, inputs, specs, tol, label="again/")
            if timing is None:
                return None, mismatch
            again = self.interference[flags:]
            self.interference[flags:] = [f"{f} (measured twice, flagged both times)" for f in again]
            print(
                f"{case.workload}: re-measured after {first!r}: {'flagged again' if again else 'clear'}",
                file=sys.stderr,
            )
            timing.remeasured = True
        return timing, mismatch

    @contextlib.contextmanager
    def _pinned(self) -> Iterator[None]:
        """Each party on one core of its own set while a case is timed (tasks.harness.cores): the
        supervisor on its core, the baseline's and the empty call's workers on theirs, the candidate
        on the first of its container's (it cannot leave them)."""
        layout = self.cores
        if not layout.separated:
            yield
            return
        self._pin(layout)
        self._keep(True)
        try:
            yield
        finally:
            self._keep(False)
            self._pin(None)

    def _keep(self, awake: bool) -> None:
        """The keepers of the timed cores keep them awake, or rest (tasks.harness.keeper)."""
        self.keeping = awake and bool(self.keepers)
        for keeper in self.keepers.values():
            keeper.keep(awake)

    def _pin(self, layout: CoreLayout | None) -> None:
        """Each party onto its core of ``layout``; None: every party back where it started."""

        def one(core: int | None) -> list[int] | None:
            return [core] if layout is not None and core is not None else None

        mine = one(self.cores.supervisor)
        pinning.pin(frozenset(mine) if mine else None)
        # the supervisor polls for the answers of a worker on another core: its own core never sleeps
        # while a call is timed, so no call's time holds the wake-up of a sleeping core (on the 2-core
        # dev VM, whose idle cores halt, one such wake-up took ~0.1 ms)
        apart = layout is not None and self.cores.workers != self.cores.supervisor
        for worker in (self.baseline, self.null):
            if worker is not None:
                worker.ask({"op": "pin", "cpus": one(self.cores.workers)})
                worker.spin = apart
        # a candidate that does not answer ok only keeps its own placement, on its own cores
        self._candidate().ask({"op": "pin", "cpus": one(self.cores.candidate_core)})
        self._candidate().spin = layout is not None

    def time_case(
        self,
        case: schema.Case,
        cand: Side,
        inputs: dict[str, Any],
        specs: dict[str, tuple[tuple[int, ...], str]],
        tol: checks.Tolerance,
        label: str = "",
    ) -> tuple[Timing | None, str]:
        """Baseline, candidate and null calls interleaved on fresh inputs until the speedup is as precise
        as the method asks (``label``: another measurement's sample labels, so its inputs are new ones;
        when to stop: tasks.harness.sampling).

        Each iteration is baseline, candidate, null or candidate, baseline, null, and each of the three
        runs in a process of its own: every call follows a call made by another process (why:
        :class:`TimedSides`).

        In the trusted batch mode (TimingMethod.batch of 2 or more) each of the three is a batch: that
        many calls back to back, the baseline's and the candidate's on as many fresh samples, each call
        on a buffer set of its own (:meth:`call_batch`), and every call's outputs checked against the
        baseline's on the same sample. A shorter per-call measurement of the same sides follows
        (``Timing.per_call``): the report holds the batch's speedup against it. With TimingMethod.graph
        each side's batch is captured in a CUDA graph once, after the warm-up, and every timed batch is
        a replay of it on that batch's fresh inputs: not even the first call's launch is timed. The
        batch is the method's, or fewer calls where the GPU's memory cannot hold that many
        (:meth:`_fitted_batch`). (None, why) when a buffer set's setup or the capture of the
        submission's calls failed: the case is then the submission's error."""
        assert self.baseline is not None, "a timed case without the baseline's worker"
        assert self.null is not None, "a timed case without the empty call's worker"
        asked = self.cfg.batch if self.cfg.batch > 1 else 0
        batch = self._fitted_batch(case, asked, inputs, specs)
        cfg = replace(self.cfg, batch=batch) if batch != self.cfg.batch else self.cfg
        sides, error = self._timed_sides(case, cand, inputs, specs, batch, label)
        if sides is None:
            return None, error
        m = Measurement(case, label, sides, tol)
        try:
            cooled = self.gpu.cool()
            warmup = self._warm_up_sides(m)
            if batch and cfg.graph and (failed := self._capture(m)):
                return None, f"capturing its batch of calls in a CUDA graph: {failed}"
            self.calls.measuring()  # only the measured calls count
            lost = self.calls.judge.lost_ms() if self.calls.judge is not None else {}
            samples, check = Samples(), Samples()
            stopped = self._sample(m, samples, cfg, batch)
            if batch and not m.mismatch:  # the same sides one call at a time: what the batch is held against
                for i in range(cfg.per_call_checks):
                    self._iteration(m, i, check, 0, "per-call")
        finally:  # the measurement's own buffer sets (the case's own side, cand, is the case's)
            self._drop([s for s in (*sides.bases, *sides.cands, sides.null) if s is not cand])
        self._log_measurement(m, samples, check, stopped, lost)
        timing = samples.timing(cfg, batch, stopped, warmup * max(batch, 1), cooled)
        timing.batch_asked = asked if batch < asked else 0
        self._watch_figures(case.workload, timing, sum(samples.baseline) * max(batch, 1) + sum(check.baseline))
        if batch and check.candidate:
            timing.per_call = check.per_call_check(cfg)
        return timing, m.mismatch

    def _sample(self, m: Measurement, samples: Samples, cfg: schema.TimingMethod, batch: int) -> str:
        """The measurement's iterations until tasks.harness.sampling says stop (why it stopped). It samples
        on for precision no longer once a call's outputs differ from the baseline's, or once the
        candidate's core keeps its keeper from it (work on that core outside the calls, which the
        shared-core check names)."""
        self.keeper_misses = 0
        return sampling.sample(
            lambda i: self._iteration(m, i, samples, batch, "sample"),
            samples,
            cfg,
            lambda: bool(m.mismatch) or self.keeper_misses > KEEPER_MISSES,
            undecided=lambda: self._shared_core_undecided(cfg),
        )

    def _shared_core_undecided(self, cfg: schema.TimingMethod) -> bool:
        """Others' work on the candidate's core so far is over the method's share but under its ms: too few
        clock ticks to refuse on, too many to stop on (a realtime host loop, 2 ms of every 4, read 47% and
        91 ms when the measurement stopped, stable, after 20 iterations, and scored it: CI at 48cdbd7)."""
        over = cpuwatch.shared_core_over(
            *cpuwatch.shared_core(self.calls.shared), cfg.shared_core_share, cfg.shared_core_ms
        )
        return over is None

    def note_free_memory(self) -> None:
        """The GPU's free memory now, what every timed batch is fitted to (:meth:`_fitted_batch`): taken
        once the trusted side has warmed up and before the submission's code may run, so that a
        submission holding memory cannot shrink the batch, or turn the timing into one call at a time
        (where the baseline's launch gaps count against it), by what it holds."""
        if self.device == "cuda":
            shared.release_unused()
            torch.cuda.empty_cache()  # this process's cached blocks are free for the batch's buffers
            self.free_memory = int(torch.cuda.mem_get_info()[0])

    def _fitted_batch(
        self, case: schema.Case, asked: int, inputs: dict[str, Any], specs: dict[str, tuple[tuple[int, ...], str]]
    ) -> int:
        """The calls per timed batch: ``asked`` (the method's, 0 for none), or fewer where the GPU's free
        memory before the submission ran (:meth:`note_free_memory`) cannot hold that many calls' buffers
        (tasks.harness.memoryfit); 0 for every call timed on its own. Not noted (no session started this
        supervisor): the method's."""
        free = self.free_memory
        if not asked or free is None:
            return asked
        given = sum(t.numel() * t.element_size() for t in inputs.values() if isinstance(t, torch.Tensor))
        made = sum(shared.nbytes(tuple(shape), getattr(torch, dtype)) for shape, dtype in specs.values())
        per_call = memoryfit.per_call_bytes(given, made)
        batch = memoryfit.fit_batch(asked, per_call, free)
        if batch < asked:
            total = torch.cuda.mem_get_info()[1]
            print(
                f"{case.workload}: batches of {batch or 1} calls, not {asked}: {free / 2**30:.1f} GiB of the GPU's "
                f"{total / 2**30:.1f} GiB free, {per_call / 2**30:.2f} GiB of buffers per call",
                file=sys.stderr,
            )
        return batch

    def _watch_figures(self, workload: str, timing: Timing, baseline_total: float) -> None:
        """The measurement's CPU watches into ``timing``: the candidate's CPU outside its calls (against
        the baseline's ``baseline_total`` ms; flagged over the limits), others' work on its core."""
        cpu = cpuwatch.outside_calls(self.calls.gaps, baseline_total)
        self._flag_outside_cpu(workload, cpu)
        timing.idle_cpu_ms, timing.idle_cpu_share = cpu["idle_cpu_ms"], cpu["idle_cpu_share"]
        timing.early_cpu_ms, timing.early_cpu_share = cpu["early_cpu_ms"], cpu["early_cpu_share"]
        if self.calls.shared:
            timing.shared_core_ms, timing.shared_core_share = cpuwatch.shared_core(self.calls.shared)
            how = "held them up (its cgroup's pressure stalls)" if self.calls.held else "ran there (clock ticks)"
            print(
                f"{workload}: others' work on the candidate's core during its calls: "
                f"{timing.shared_core_ms:.3f} ms, {timing.shared_core_share:.2%} of their time; {how}",
                file=sys.stderr,
            )

    def _timed_sides(
        self,
        case: schema.Case,
        cand: Side,
        inputs: dict[str, Any],
        specs: dict[str, tuple[tuple[int, ...], str]],
        batch: int,
        label: str,
    ) -> tuple[TimedSides | None, str]:
        """Every side a measurement calls, set up: per call, buffer_sets sets of buffers per side, a pair
        of iterations on each in turn (where a side's buffers happen to lie in memory is not one draw
        for the whole request: see TimingMethod); in a batch, one set per call of the batch. (None, why)
        when the candidate's setup of one failed."""
        assert self.baseline is not None and self.null is not None
        null = self._side(self.null, case, inputs, specs, null=True)
        self._setup(null, case.params, case, null=True)  # a trusted worker's failure raises (tasks.harness.link)
        bases, cands = [], [cand]
        for k in range(batch or max(1, self.cfg.buffer_sets)):
            bases.append(self._side(self.baseline, case, inputs, specs, label=f"/{label}set{k}"))
            self._setup(bases[-1], case.params, case)
            if k:
                cands.append(self._side(self._candidate(), case, inputs, specs, label=f"/{label}set{k}"))
                error = self._setup(cands[-1], case.params, case)
                if error:
                    return None, f"the setup of buffer set {k + 1}: {error}"
        return TimedSides(bases, cands, null, batch), ""

    def _draw(self, m: Measurement, what: str, count: int) -> list[dict[str, Any]]:
        """One call's fresh sample (``count`` 0), or one per call of a batch of ``count``."""
        labels = [f"{m.label}{what}/{j}" for j in range(count)] if count else [f"{m.label}{what}"]
        return [self.mod.make_inputs(m.case.params, self._seed(m.case.id, name), self.device) for name in labels]

    def _warm_up_sides(self, m: Measurement) -> int:
        """Untimed iterations of every side for warmup_s (at least 3, or one per buffer set); their
        number."""
        batch, sides = m.sides.batch, m.sides
        warmup = 0
        end = time.monotonic() + self.cfg.warmup_s
        least = max(3, 1 if batch else len(sides.bases))
        while time.monotonic() < end or warmup < least:
            began = time.monotonic()
            drawn = self._draw(m, f"warmup/{warmup}", batch)
            if batch:
                ms = [self.call_batch(group, drawn)[0] for group in (sides.bases, sides.cands, [sides.null] * batch)]
            else:
                turn = (sides.bases[warmup % len(sides.bases)], sides.cands[warmup % len(sides.cands)], sides.null)
                ms = [self.call(side, drawn[0])[0] for side in turn]
            warmup += 1
            if warmup >= 2:  # not on the first: a call may still compile or autotune in it
                needed = max(least - warmup, 0) + self.cfg.min_reps
                self._within_the_limit(ms[0], ms[1], time.monotonic() - began, needed, batch)
        return warmup

    def _within_the_limit(
        self, base_ms: float, cand_ms: float, iteration_s: float, iterations: int, batch: int
    ) -> None:
        """Raise :class:`TooSlow` when ``iterations`` more like the last (``iteration_s``, in which a call
        of the submission took ``cand_ms`` and the baseline's ``base_ms``) cannot end before the
        evaluation's deadline, and the submission's calls are what make it so (slower than the
        baseline's: a task whose own baseline is too slow for its limit runs to the deadline)."""
        if not self.deadline or cand_ms <= base_ms:
            return
        left = self.deadline - time.time() - self.cfg.deadline_margin_s
        if iterations * iteration_s <= left:
            return
        batch = max(batch, 1)
        others = max(iteration_s - cand_ms * batch / 1e3, 0.0)
        allow = max(left / iterations - others, 0.0) / batch
        raise TooSlow(
            f"too slow: one call takes {cand_ms / 1e3:.3g} s (the baseline's {base_ms / 1e3:.3g} s); the "
            f"{max(left, 0):.0f} s left of the evaluation's time limit allow {allow:.3g} s per call for the "
            f"{iterations} iterations its measurement still needs"
        )

    def _capture(self, m: Measurement) -> str | None:
        """Each side's batch, and each call alone, captured once in a CUDA graph, then replayed a few
        times untimed (a graph's first replays also upload it to the device); the worker's error, if any."""
        sides, batch = m.sides, m.sides.batch
        for group in [
            sides.bases,
            sides.cands,
            [sides.null] * batch,
            *([s] for s in (*sides.bases, *sides.cands, sides.null)),
        ]:
            error = group[0].worker.ask({"op": "capture", "cases": [side.case for side in group]})
            if error:  # the candidate's (a trusted worker's failure raises: tasks.harness.link)
                return error
        sides.graphed = True
        for k in range(GRAPH_WARMUP):
            drawn = self._draw(m, f"warmup/graph{k}", batch)
            for group in (sides.bases, sides.cands, [sides.null] * batch):
                self.call_batch(group, drawn, graph=True)
        return None

    def _iteration(self, m: Measurement, i: int, into: Samples, per: int, what: str) -> None:
        """Iteration ``i``: the baseline, the candidate (in the order of ``i``) and the empty call, each
        one call (``per`` 0) or a batch of ``per`` calls, its figures appended to ``into``; the first
        output that differs from the baseline's on the same sample goes to ``m.mismatch``."""
        t0 = time.monotonic()
        # the previous iteration's garbage in reference cycles (a draw's tensors held by one, say) freed
        # now, outside every timed window, before this one's draw: the collector's own passes come after
        # so many Python objects made that big tensors in cycles could fill the device in between
        m.cyclic += gc.collect()
        drawn = self._draw(m, f"{what}/{i}", per)
        t1 = time.monotonic()
        outs: dict[str, list[dict[str, torch.Tensor]]] = {}
        times: dict[str, float] = {}
        self.calls.waited = 0.0
        judge = self.calls.judge
        irq = judge.irq_ms() if judge is not None else 0.0
        before = self.clock.read() if self.clock is not None else None
        for key, sides in m.sides.calls(i, per):
            if per or m.sides.graphed:  # graphed: the per-call check replays each call's graph of its own
                times[key], outs[key], error = self.call_batch(sides, drawn, m.sides.graphed)
            else:
                times[key], one, error = self.call(sides[0], drawn[0])
                outs[key] = [one]
            if error and not m.mismatch:
                m.mismatch = f"timed sample {i}: {error}"
        into.baseline.append(times["b"])
        into.candidate.append(times["c"])
        into.null.append(times["n"])
        into.waits.append(self.calls.waited + (judge.irq_ms() - irq if judge is not None else 0.0))
        after = self.clock.read() if self.clock is not None else None
        if before is not None and after is not None:
            into.mhz.append(min(before.sm_mhz, after.sm_mhz))
            into.temp.append(max(before.temp_c, after.temp_c))
            into.throttled.append(bool(before.throttled or after.throttled))
            if before.throttled or after.throttled:
                m.throttles |= before.reasons | after.reasons
        t2 = time.monotonic()
        for j, (got, want) in enumerate(zip(outs["c"], outs["b"], strict=True)):
            if m.mismatch:
                break
            problem, _ = self._judge(drawn[j], got, want, m.tol)
            if problem:
                m.mismatch = f"timed sample {i}" + (f", call {j + 1} of its batch" if per else "") + f": {problem}"
        m.spent["drawing inputs"] += t1 - t0
        m.spent["the calls"] += t2 - t1
        m.spent["comparing"] += time.monotonic() - t2
        self._progress_again()

    def _log_measurement(
        self, m: Measurement, samples: Samples, check: Samples, stopped: str, lost: dict[int, float]
    ) -> None:
        """The operator's record of a measurement (the judge's log): what it took, where the time went,
        the GPU's slow-downs, what the host took from each core of the lease since ``lost``."""
        batch, name = m.sides.batch, m.case.workload
        print(
            f"{name}: {len(samples)} {'batches of ' + str(batch) if batch else 'samples'}"
            + (" replayed as CUDA graphs" if m.sides.graphed else "")
            + f" ({stopped})"
            + (f" and {len(check)} single calls" if batch else "")
            + ": "
            + ", ".join(f"{k} {v:.2f} s" for k, v in m.spent.items())
            + f"; on the clock {samples.clock_ms() * max(batch, 1) / 1000:.2f} s"
            + f"; judge's unbilled wait {sum(samples.waits):.2f} ms"
            + f"; objects in reference cycles freed between iterations: {m.cyclic}",
            file=sys.stderr,
        )
        if len(samples):  # where a figure's draw comes from: each process's raw times
            alone = "; " + _medians(check, "alone") if batch and len(check) else ""
            print(
                f"{name}: median raw ms per call, " + _medians(samples, "in batches" if batch else "alone") + alone,
                file=sys.stderr,
            )
        if any(samples.throttled):
            print(
                f"{name}: {sum(samples.throttled)} iterations with the GPU slowed "
                f"({reasons_text(m.throttles)}), left out",
                file=sys.stderr,
            )
        if self.calls.judge is not None:  # each core of the lease, what the host took from it
            now = self.calls.judge.lost_ms()
            mine = sorted({*self.cores.judge, *self.cores.candidate})
            print(
                f"{name}: irq, softirq and steal ms per core while timed: "
                + ", ".join(f"{c}: {now.get(c, 0.0) - lost.get(c, 0.0):.0f}" for c in mine)
                + f" (judge {sorted(self.cores.judge)}, candidate {list(self.cores.candidate)})",
                file=sys.stderr,
            )

    def _flag_outside_cpu(self, name: str, figures: dict[str, float]) -> None:
        """The candidate's CPU use outside its calls (tasks.harness.cpuwatch): flagged over the method's
        limits where it is watched, and in the judge's log."""
        if self.calls.watch is None:
            return
        self.interference += cpuwatch.outside_flags(name, figures, self.cfg.idle_cpu_ms, self.cfg.idle_cpu_share)
        print(
            f"{name}: candidate CPU outside calls: {json.dumps({k: round(v, 4) for k, v in figures.items()})}",
            file=sys.stderr,
        )


def _medians(s: Samples, how: str) -> str:
    """``how``: the baseline's, the candidate's and the empty call's median raw ms (the judge's log)."""
    return f"{how}: baseline {median(s.baseline):.4f}, candidate {median(s.candidate):.4f}, empty {median(s.null):.4f}"
