"""The supervisor (started by tasks.harness.supervise, its entry point).

The trusted half of an evaluation, in a container that never holds candidate code (its own uid,
its own filesystem, its own PID and IPC namespaces, cores the candidate's container cannot use
while a case is timed: tasks.harness.cores). It owns everything that decides the verdict:
- the cases (the judge's case file, with the holdout and the per-request sample key: never shown
  to the candidate), each case's inputs, the reference outputs and the tolerances;
- the buffers: each worker gets its own inputs and outputs (tasks.harness.shared), which the
  supervisor rewrites before every call and snapshots after it;
- the clock: a call's time runs from the moment its inputs start to be written until the
  supervisor holds a copy of its outputs; the protocol's fixed cost (the same sequence around a
  call that does nothing) is measured interleaved and reported;
- the baseline, run by a worker of its own in this container, timed the same way and interleaved
  with the candidate on the same fresh inputs, drawn from the secret key at the time of the call;
- the checks: every call's outputs, timed ones included, against the reference (untimed cases)
  or against the baseline's outputs on the same sample (timed ones), and the candidate
  container's CPU time outside its calls (tasks.harness.cpuwatch).
It writes OUT_DIR/result.json (tasks.harness.schema.SupervisorResult) at the end, and
OUT_DIR/progress.json (where it is: a holdout probe by its number only, or a workload and whether it
is being checked or timed) as it goes, so that a deadline or a cancel can say where it struck.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from kcoral.tasks.harness import autotune, checks, cpuwatch, pinning, sampling, schema, shared
from kcoral.tasks.harness.callwatch import CallWatch
from kcoral.tasks.harness.channel import Channel, ChannelError, accept, listen
from kcoral.tasks.harness.cores import CoreLayout
from kcoral.tasks.harness.cores import parse as parse_cores
from kcoral.tasks.harness.cpuwatch import CpuWatch, for_leaf
from kcoral.tasks.harness.gpuclock import GpuClock, open_clock, reasons_text
from kcoral.tasks.harness.gpuguard import GpuGuard
from kcoral.tasks.harness.interference import JudgeWatch
from kcoral.tasks.harness.link import CandidateGone, Worker, hello
from kcoral.tasks.harness.roles import CANDIDATE_CGROUP_FILE, TRUSTED_WORKERS
from kcoral.tasks.harness.sampling import Samples
from kcoral.tasks.harness.schema import CaseResult, Outcome, Timing
from kcoral.tasks.harness.taskdef import load_task

_ns = time.perf_counter_ns


class Laps:
    """Seconds per named stage, in the order first met: where a case's (or the start's) time went.
    Written to the judge log, the operator's record (tasks.evaluate keeps it on the server)."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = {}
        self._mark = time.monotonic()

    def lap(self, name: str) -> None:
        """The time since the previous lap (or since this was made) goes to ``name``."""
        now = time.monotonic()
        self.spent[name] = self.spent.get(name, 0.0) + now - self._mark
        self._mark = now

    def line(self) -> str:
        return ", ".join(f"{name} {seconds:.2f} s" for name, seconds in self.spent.items())


def process_age() -> float:
    """Seconds since this process started (its interpreter's start-up and imports included)."""
    with open("/proc/self/stat") as f:
        ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    return time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")


#: untimed replays of each side's captured batch before sampling (TimingMethod.graph)
GRAPH_WARMUP = 2


@dataclass
class Side:
    """One worker's buffers for one case."""

    worker: Worker
    case: str
    inputs: dict[str, torch.Tensor]
    outputs: dict[str, torch.Tensor]
    bufs: list[shared.Buffer]
    #: the supervisor's private copies of the outputs, taken as each call returns (reused call to call)
    snapshot: dict[str, torch.Tensor] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.snapshot = {name: torch.empty_like(t) for name, t in self.outputs.items()}


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


def write_progress(out: Path, **where: Any) -> None:
    """OUT_DIR/progress.json, replaced atomically (the server reads it after a kill)."""
    tmp = out / "progress.json.tmp"
    tmp.write_text(json.dumps({**where, "at": time.time()}))
    tmp.rename(out / "progress.json")


class TooSlow(Exception):
    """The submission's calls are too slow to be measured before the evaluation's deadline: its case
    FAILs with this reason, at once, instead of the evaluation running out of time."""


@dataclass
class Supervisor:
    task_dir: Path
    doc: schema.CaseFile
    baseline: Worker | None  # started only when a case is timed (a check times none)
    #: the empty call's worker: a process of its own, so that every timed call, the baseline's and the
    #: candidate's alike, follows a call made by another process (see :meth:`time_case`)
    null: Worker | None
    out: Path | None = None
    #: the candidate's worker: given by :meth:`join` once it has connected (with its CPU watch)
    candidate: Worker | None = None
    interference: list[str] = field(default_factory=list)
    #: seconds per phase (schema.SupervisorResult.phases)
    phases: dict[str, float] = field(default_factory=dict)
    #: who runs on which core while a case is timed (tasks.harness.cores)
    cores: CoreLayout = field(default_factory=lambda: CoreLayout(None, None, ()))
    #: what is read around every timed call: the candidate's CPU, its core's other work, the trusted
    #: side's unbilled waits (tasks.harness.callwatch; its judge set where the cores are separated)
    calls: CallWatch = field(init=False)
    #: what the cases said so far (progress.json's ``done``: what a killed evaluation still shows)
    done: list[str] = field(default_factory=list)
    #: ms the submission's last call took (per call, in a batch)
    last_call_ms: float = 0.0

    def __post_init__(self) -> None:
        task = load_task(self.task_dir)
        self.mod = task.module()
        self.read_only = task.inputs_read_only
        self.device = task.device
        self.cfg = self.doc.timing
        self.key = bytes.fromhex(self.doc.sample_key)
        self.flush = torch.zeros(max(self.cfg.flush_bytes // 4, 1), dtype=torch.float32, device=self.device)
        self.calls = CallWatch(self.cores)
        #: reference outputs computed ahead (:meth:`_precompute`), by case id, each used once
        self.references: dict[str, dict[str, torch.Tensor]] = {}
        self.clock: GpuClock | None = _gpu_clock() if self.device == "cuda" else None
        probe = _probe(self.device) if self.device == "cuda" else None
        self.gpu = GpuGuard(self.clock, probe, self.cfg.hot_c, self.cfg.cool_s, self.cfg.quiet_probe_ms)
        self.deadline = self.doc.deadline
        self._where: dict[str, Any] = {}
        self._written_at = 0.0
        self.probes_passed = 0

    def join(self, candidate: Worker, watch: CpuWatch | None) -> None:
        """The candidate's worker has connected and said hello: the cases can run."""
        self.candidate, self.calls.watch = candidate, watch
        self.calls.settled()

    def _candidate(self) -> Worker:
        assert self.candidate is not None, "the cases run only once the candidate has joined"
        return self.candidate

    # --- first calls, before the cases -----------------------------------------------------------

    def _warm_up_case(self) -> schema.Case | None:
        """The case whose shapes the first calls are made for: the first timed one (a public
        workload), else the first case."""
        return next((c for c in self.doc.cases if c.timed), self.doc.cases[0] if self.doc.cases else None)

    def warm_up(self) -> None:
        """The reference's and the baseline's first calls (kernels compiled or loaded: on the H200 a warm
        first call of FLA's reference took 4-10 s), made while the candidate's container starts: the
        baseline's worker makes its call while this process makes the reference's.

        Both before the candidate's worker may import the submission (it waits for ``go``): on a cold
        kernel cache these calls autotune, and the choices they write are the baseline's for every
        later evaluation on this host, so nothing of the candidate's runs meanwhile. Both inside
        :func:`tasks.harness.autotune.compile_ahead`: a kernel's configs compiled at once, and one
        process at a time benchmarking (the other then reads its choice).

        Trusted processes only, on inputs drawn from the sample key under a label no case uses: the
        candidate gets nothing from it, and no case's result depends on it. It is only a head start:
        what fails here is met again, and judged, in the cases (see :func:`main`)."""
        case = self._warm_up_case()
        if case is None:
            return
        inputs = self.mod.make_inputs(case.params, self._seed(case.id, "warm-up"), self.device)
        pending = None
        if self.baseline is not None and case.timed:
            pending = self._side(self.baseline, case, inputs, self.mod.output_specs(inputs), label="/warm-up")
            if self._setup(pending, case.params, case) is None:
                if self.cores.separated:  # its compiles on every core of the judge's (it started on one: its thread
                    # pools stay sized for one), back on its own once its first call is answered
                    self.baseline.ask({"op": "pin", "cpus": sorted(pinning.STARTED_ON)})
                self.baseline.send({"op": "call", "case": pending.case, "warm_up": True})
            else:
                pending.worker.ask({"op": "drop", "case": pending.case})
                pending = None
        try:
            with autotune.compile_ahead():
                self.mod.reference(inputs, case.params)
                self._sync()
        finally:
            if pending is not None:  # its answer is read whatever happened: the next one must be the next's
                pending.worker.answer()
                pending.worker.ask({"op": "drop", "case": pending.case})
                if self.cores.separated:
                    pending.worker.ask({"op": "pin", "cpus": None})

    def warm_up_candidate(self) -> None:
        """The candidate's first call, before any case: set up on the same case as :meth:`warm_up`, on
        decoy inputs, called once, its outputs never read. A submission's first call compiles or loads
        its kernels (6.4-6.5 s for FLA's on the H200), which the first holdout probe would otherwise
        wait for; meanwhile this process computes the cases' reference outputs (:meth:`_precompute`).
        Nothing here is checked: a failure meets the submission again, and is reported, in its first
        case."""
        case = self._warm_up_case()
        if case is None:
            return
        inputs = self.mod.make_inputs(case.params, self._seed(case.id, "warm-up"), self.device)
        side = self._side(self._candidate(), case, inputs, self.mod.output_specs(inputs), label="/warm-up")
        with contextlib.suppress(CandidateGone):  # every case will say so
            if self._setup(side, case.params, case) is None:
                side.worker.send({"op": "call", "case": side.case})
                self._precompute(until=side.worker)
                side.worker.answer()
            side.worker.ask({"op": "drop", "case": side.case})

    def _precompute(self, until: Worker) -> None:
        """The cases' reference outputs, in the cases' order, kept for :meth:`_run_case`, until ``until``
        has answered (what the time it spent allowed: no more work, or memory, than fits in it). On
        the H200 the KDA task's two fp64 oracles take 1.6-1.8 s each."""
        for case in self.doc.cases:
            if until.chan.ready():
                return
            try:
                inputs = self.mod.make_inputs(case.params, case.seed, self.device)
                self.references[case.id] = self.mod.reference(inputs, case.params)
                self._sync()
            except torch.OutOfMemoryError:  # the candidate may hold the memory: each case computes its own
                self.references.clear()
                return

    # --- the cases -----------------------------------------------------------------------------

    def run(self) -> list[CaseResult]:
        """Every case in order (the holdout first). A failed probe ends the holdout (the others would
        say no more) and the timing; the public workloads are still checked, so their reasons reach
        the submitter."""
        results = []
        holdout_failed = False
        probes = [c for c in self.doc.cases if c.phase is schema.Phase.HOLDOUT]
        for case in self.doc.cases:
            if holdout_failed and case.phase is schema.Phase.HOLDOUT:
                continue
            if case.phase is schema.Phase.HOLDOUT:
                self._progress(phase="holdout", probe=probes.index(case) + 1, of=len(probes))
            else:
                self._progress(phase="workload", workload=case.workload, step="check")
            began = time.monotonic()
            try:
                result = self.run_case(case, timed=case.timed and not holdout_failed)
            except CandidateGone as exc:
                result = CaseResult(case.id, Outcome.ERROR, str(exc))
            except torch.OutOfMemoryError as exc:  # the candidate may hold the device's memory
                result = CaseResult(case.id, Outcome.ERROR, f"the supervisor ran out of memory: {exc}"[:2000])
            results.append(result)
            self._done(case, result, probes)
            spent = time.monotonic() - began
            if case.phase is schema.Phase.HOLDOUT:
                self.phases["holdout"] = self.phases.get("holdout", 0.0) + spent
            else:
                timing = self.phases.pop(f"timing {case.workload}", 0.0)
                self.phases[f"check {case.workload}"] = spent - timing
                if timing:
                    self.phases[f"timing {case.workload}"] = timing
            # the operator's record (the judge log stays on the server): holdout details included
            print(f"{case.id} {case.workload}: {result.outcome.value} {result.reason[:500]!r}", file=sys.stderr)
            if case.phase is schema.Phase.HOLDOUT and result.outcome is not Outcome.PASS:
                holdout_failed = True
        return results

    def run_case(self, case: schema.Case, timed: bool) -> CaseResult:
        laps = Laps()
        try:
            return self._run_case(case, timed, laps)
        finally:
            print(f"{case.id} {case.workload} took: {laps.line()}", file=sys.stderr)

    def _run_case(self, case: schema.Case, timed: bool, laps: Laps) -> CaseResult:
        params, tol = case.params, checks.Tolerance(**case.tolerance)
        inputs = self.mod.make_inputs(params, case.seed, self.device)
        specs = self.mod.output_specs(inputs)
        self._sync()
        laps.lap("inputs")
        expected = self.references.pop(case.id, None) or self.mod.reference(inputs, params)
        self._sync()
        laps.lap("reference")
        cand = self._side(self._candidate(), case, inputs, specs)
        error = self._setup(cand, params, case)
        laps.lap("setup")
        if error:
            return CaseResult(case.id, Outcome.ERROR, error)
        _, outs, error = self.call(cand, inputs)
        laps.lap("call")
        if error:
            return CaseResult(case.id, Outcome.ERROR, error)
        problem, stats = self._judge(inputs, outs, expected, tol)
        laps.lap("compare")
        if problem:
            return CaseResult(case.id, Outcome.FAIL, problem, stats)
        warnings = []
        outputs_among_inputs = set(getattr(self.mod, "preallocated", lambda data: ())(inputs))  # GPU MODE's
        if written := [n for n in _written(cand.inputs, inputs) if n not in outputs_among_inputs]:
            what = f"the submission wrote into its input{'s' if len(written) > 1 else ''} {', '.join(written)}"
            if self.read_only:
                return CaseResult(case.id, Outcome.FAIL, f"{what}: this task's inputs are read-only", stats)
            warnings.append(f"{what} (allowed by this task, but the caller's data changes)")
        if not timed:
            return CaseResult(case.id, Outcome.PASS, "", stats, warnings=warnings)
        self._progress(phase="workload", workload=case.workload, step="timing")
        began = time.monotonic()
        try:
            timing, mismatch = self._measure(case, cand, inputs, specs, tol)
        except TooSlow as exc:
            return CaseResult(case.id, Outcome.FAIL, str(exc), stats, warnings=warnings)
        if timing is None:
            return CaseResult(case.id, Outcome.ERROR, mismatch)
        self.phases[f"timing {case.workload}"] = time.monotonic() - began
        laps.lap("timing")
        _, outs, error = self.call(cand, inputs)
        after = error or self._judge(inputs, outs, expected, tol)[0]
        flaky = mismatch or (f"after timing: {after}" if after else "")
        return CaseResult(case.id, Outcome.FLAKY if flaky else Outcome.PASS, flaky, stats, timing, warnings)

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
        when the second one's setup failed."""
        flags = len(self.interference)
        with self._pinned():
            timing, mismatch = self.time_case(case, cand, inputs, specs, tol)
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
            again = self.interference[flags:]
            self.interference[flags:] = [f"{f} (measured twice, flagged both times)" for f in again]
            print(
                f"{case.workload}: re-measured after {first!r}: {'flagged again' if again else 'clear'}",
                file=sys.stderr,
            )
            timing.remeasured = True
        return timing, mismatch

    def _side(
        self,
        worker: Worker,
        case: schema.Case,
        inputs: dict[str, Any],
        specs: dict[str, tuple[tuple[int, ...], str]],
        null: bool = False,
        label: str = "",
    ) -> Side:
        tensors = {k: v for k, v in inputs.items() if isinstance(v, torch.Tensor)}
        bufs = [shared.allocate(k, tuple(v.shape), v.dtype, self.device) for k, v in tensors.items()]
        bufs += [
            shared.allocate(k, tuple(shape), getattr(torch, dtype), self.device, role="out")
            for k, (shape, dtype) in specs.items()
        ]
        return Side(
            worker,
            case.id + ("/null" if null else label),
            {b.name: b.tensor for b in bufs[: len(tensors)]},
            {b.name: b.tensor for b in bufs[len(tensors) :]},
            bufs,
        )

    def _setup(self, side: Side, params: dict[str, Any], case: schema.Case, null: bool = False) -> str | None:
        """Map the side's buffers into its worker and build its callable, on decoy inputs (a sample
        drawn from the key that is never timed or checked: nothing computed here is of use later)."""
        decoy = self.mod.make_inputs(params, self._seed(side.case, "decoy"), self.device)
        for name, t in side.inputs.items():
            t.copy_(decoy[name])
        _poison(side.outputs)
        scalars = {k: v for k, v in decoy.items() if not isinstance(v, torch.Tensor)}
        bufs = side.bufs
        message = {
            "op": "setup",
            "case": side.case,
            "scalars": scalars,
            "buffers": [b.wire for b in bufs],
            "null": null,
        }
        error = side.worker.ask(message, [b.fd for b in bufs if b.fd is not None])
        for b in bufs:
            if b.fd is not None:
                os.close(b.fd)
                b.fd = None
        self.calls.settled()  # the candidate may work while it sets up
        return error

    # --- one call, timed -------------------------------------------------------------------------

    def call(self, side: Side, sample: dict[str, Any]) -> tuple[float, dict[str, torch.Tensor], str | None]:
        """(ms, the side's snapshot of the outputs, error): inputs written, caches flushed, the call
        made and its outputs copied, all on the supervisor's clock. The candidate's CPU time before
        the call (since its previous call, and while its inputs were written) goes to ``self.calls``."""
        _poison(side.outputs)
        if self.device == "cuda":
            shared.reset_persisting_l2()
            self._wait_quiet()
        window = self.calls.open(side.worker is self.candidate)
        self.calls.judging(window, self._watched(side.worker))
        self._sync()
        t0 = _ns()
        for name, t in side.inputs.items():
            t.copy_(sample[name])
        self.flush.add_(1.0)
        self._sync()
        self.calls.written(window)
        error = side.worker.ask({"op": "call", "case": side.case})
        for name, t in side.outputs.items():
            side.snapshot[name].copy_(t)
        self._sync()
        elapsed = (_ns() - t0) / 1e6
        self.calls.close(window)
        if side.worker is not self.candidate:
            _poison(side.outputs)  # the baseline's answer never waits in memory for the candidate's call
        else:
            self.last_call_ms = elapsed
        return elapsed, side.snapshot, error

    def call_batch(
        self, sides: list[Side], samples: list[dict[str, Any]], graph: bool = False
    ) -> tuple[float, list[dict[str, torch.Tensor]], str | None]:
        """The trusted batch mode's call (TimingMethod.batch): (ms per call, each side's snapshot of its
        outputs, error). Every side's inputs are written (the i-th side gets the i-th sample; the empty
        call's side needs none) and its outputs poisoned, the cache flushed and the device idle before
        the clock starts; the clock then runs over one ``batch`` operation, in which the worker makes
        every side's call back to back and synchronises the device once, until its answer. The
        snapshots are taken after the clock stops: no output is copied inside the window, so a
        batch's time is its calls' and the protocol's (the empty call's batch measures that). ``graph``:
        the worker replays the batch's captured CUDA graph (TimingMethod.graph) instead of calling."""
        worker = sides[0].worker
        window = self.calls.open(worker is self.candidate)
        for side, sample in zip(sides, samples, strict=True):
            _poison(side.outputs)
            if worker is not self.null:
                for name, t in side.inputs.items():
                    t.copy_(sample[name])
        self.flush.add_(1.0)
        if self.device == "cuda":
            shared.reset_persisting_l2()
        self._sync()
        if self.device == "cuda":
            self._wait_quiet()
        self.calls.judging(window, self._watched(worker))
        self.calls.written(window)
        t0 = _ns()
        error = worker.ask({"op": "batch", "cases": [side.case for side in sides], "graph": graph})
        elapsed = (_ns() - t0) / 1e6
        self.calls.close(window)
        for side in {id(side): side for side in sides}.values():  # the empty call's batch repeats one side
            for name, t in side.outputs.items():
                side.snapshot[name].copy_(t)
            if worker is not self.candidate:
                _poison(side.outputs)
        self._sync()
        if worker is self.candidate:
            self.last_call_ms = elapsed / len(sides)
        return elapsed / len(sides), [side.snapshot for side in sides], error

    def _watched(self, worker: Worker) -> list[str]:
        return self.calls.watched(worker.trusted, worker.name)

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
        try:
            yield
        finally:
            self._pin(None)

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
    ) -> tuple[Timing, str]:
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
        a replay of it on that batch's fresh inputs: not even the first call's launch is timed."""
        assert self.baseline is not None, "a timed case without the baseline's worker"
        assert self.null is not None, "a timed case without the empty call's worker"
        batch = self.cfg.batch if self.cfg.batch > 1 else 0
        sides, error = self._timed_sides(case, cand, inputs, specs, batch, label)
        if sides is None:
            return Timing([], [], [], "setup", 0), error
        m = Measurement(case, label, sides, tol)
        cooled = self.gpu.cool()
        warmup = self._warm_up_sides(m)
        if batch and self.cfg.graph and (failed := self._capture(m)):
            return Timing([], [], [], "setup", 0), f"capturing its batch of calls in a CUDA graph: {failed}"
        self.calls.measuring()  # only the measured calls count
        lost = self.calls.judge.lost_ms() if self.calls.judge is not None else {}
        samples, check = Samples(), Samples()
        stopped = sampling.sample(
            lambda i: self._iteration(m, i, samples, batch, "sample"), samples, self.cfg, lambda: bool(m.mismatch)
        )
        if batch and not m.mismatch:  # the same sides one call at a time: what the batch is held against
            for i in range(self.cfg.per_call_checks):
                self._iteration(m, i, check, 0, "per-call")
        self._log_measurement(m, samples, check, stopped, lost)
        timing = samples.timing(self.cfg, batch, stopped, warmup * max(batch, 1), cooled)
        self._watch_figures(case.workload, timing, sum(samples.baseline) * max(batch, 1) + sum(check.baseline))
        if batch and check.candidate:
            timing.per_call = check.timing(self.cfg, 0, "per-call check", 0, 0.0)
        return timing, m.mismatch

    def _watch_figures(self, workload: str, timing: Timing, baseline_total: float) -> None:
        """The measurement's CPU watches into ``timing``: the candidate's CPU outside its calls (against
        the baseline's ``baseline_total`` ms; flagged over the limits), others' work on its core."""
        cpu = cpuwatch.outside_calls(self.calls.gaps, baseline_total)
        self._flag_outside_cpu(workload, cpu)
        timing.idle_cpu_ms, timing.idle_cpu_share = cpu["idle_cpu_ms"], cpu["idle_cpu_share"]
        timing.early_cpu_ms, timing.early_cpu_share = cpu["early_cpu_ms"], cpu["early_cpu_share"]
        if self.calls.shared:
            timing.shared_core_ms, timing.shared_core_share = cpuwatch.shared_core(self.calls.shared)
            print(
                f"{workload}: others' work on the candidate's core during its calls: "
                f"{timing.shared_core_ms:.0f} ms, {timing.shared_core_share:.1%} of their time",
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
        self._setup(null, case.params, case, null=True)
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
                self._within_the_limit(ms[0], ms[1], time.monotonic() - began, needed)
        return warmup

    def _within_the_limit(self, base_ms: float, cand_ms: float, iteration_s: float, iterations: int) -> None:
        """Raise :class:`TooSlow` when ``iterations`` more like the last (``iteration_s``, in which a call
        of the submission took ``cand_ms`` and the baseline's ``base_ms``) cannot end before the
        evaluation's deadline, and the submission's calls are what make it so (slower than the
        baseline's: a task whose own baseline is too slow for its limit runs to the deadline)."""
        if not self.deadline or cand_ms <= base_ms:
            return
        left = self.deadline - time.time() - self.cfg.deadline_margin_s
        if iterations * iteration_s <= left:
            return
        batch = max(self.cfg.batch, 1)
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
            if error:
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
            + f"; judge's unbilled wait {sum(samples.waits):.2f} ms",
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

    # --- helpers -------------------------------------------------------------------------------

    def _judge(
        self,
        inputs: dict[str, Any],
        outs: dict[str, torch.Tensor],
        expected: dict[str, torch.Tensor],
        tol: checks.Tolerance,
    ) -> tuple[str | None, dict[str, dict[str, float]]]:
        """A call's outputs against ``expected`` (the reference's, or the baseline's on the same sample):
        the task's own ``check`` where it has one (a GPU MODE problem's check_implementation, given
        this process's own copy of the inputs: tasks.packs.gpumode), else the tolerance rule."""
        check = getattr(self.mod, "check", None)
        if check is None:
            return _compare(outs, expected, tol)
        try:
            reason = check(inputs, outs)
        except Exception as exc:  # noqa: BLE001 - the problem's check failing on these outputs is their failure
            reason = f"check_implementation raised {type(exc).__name__}: {exc}"
        return (str(reason)[:2000] or None), {}

    def _progress(self, **where: Any) -> None:
        """Where the evaluation is (progress.json), with what the cases said so far and the submission's
        last call: what the server shows of an evaluation its time limit stopped."""
        self._where = where
        self._written_at = time.monotonic()
        if self.out is not None:
            write_progress(self.out, **where, done=self.done, last_call_ms=round(self.last_call_ms, 3))

    def _progress_again(self) -> None:
        """progress.json once more, at most once a second, while a case goes on (its last call's time)."""
        if self._where and time.monotonic() - self._written_at > 1.0:
            self._progress(**self._where)

    def _done(self, case: schema.Case, result: CaseResult, probes: list[schema.Case]) -> None:
        """A finished case into :attr:`done`: a workload by name and outcome; the holdout by how many of
        its probes passed so far, never which."""
        if case.phase is schema.Phase.HOLDOUT:
            self.probes_passed += result.outcome is Outcome.PASS
            ok = result.outcome is Outcome.PASS
            line = f"holdout: {self.probes_passed} of {len(probes)} probes passed" if ok else "holdout: FAIL"
            self.done[:] = [line, *(d for d in self.done if not d.startswith("holdout"))]
            return
        self.done.append(f"{case.workload} {result.outcome.value}")

    def _seed(self, case_id: str, label: str) -> int:
        digest = hmac.new(self.key, f"{case_id}/{label}".encode(), hashlib.sha256).digest()
        return int.from_bytes(digest[:8], "little") >> 1

    def _sync(self) -> None:
        if self.device == "cuda":
            torch.cuda.synchronize()

    def _wait_quiet(self) -> None:
        """Wait for a GPU no other context keeps busy (tasks.harness.gpuguard); flagged once if never."""
        flag = self.gpu.wait_quiet()
        if flag:
            self.interference.append(flag)


def _probe(device: str) -> Callable[[], float]:
    """ms for one tiny kernel and a device-wide synchronize (tasks.harness.gpuguard's probe)."""
    one = torch.zeros(1, device=device)

    def probe() -> float:
        t = _ns()
        one.add_(1.0)
        torch.cuda.synchronize()
        return (_ns() - t) / 1e6

    return probe


def _gpu_clock() -> GpuClock | None:
    """The leased GPU's NVML readings (None where NVML cannot be reached: no clock figures then)."""
    try:
        return open_clock(str(torch.cuda.get_device_properties(0).uuid))
    except (RuntimeError, AttributeError):
        return None


def _written(given: dict[str, torch.Tensor], sample: dict[str, Any]) -> list[str]:
    """The inputs whose buffers no longer hold the sample written into them before the call, bit for
    bit (a NaN written stays equal to itself)."""
    return [
        name
        for name, t in given.items()
        if not torch.equal(t.reshape(-1).view(torch.uint8), sample[name].reshape(-1).view(torch.uint8))
    ]


def _poison(tensors: dict[str, torch.Tensor]) -> None:
    for t in tensors.values():
        t.fill_(math.nan) if t.is_floating_point() else t.fill_(-1)


def _compare(
    outs: dict[str, torch.Tensor], ref: dict[str, torch.Tensor], tol: checks.Tolerance
) -> tuple[str | None, dict[str, dict[str, float]]]:
    stats: dict[str, dict[str, float]] = {}
    for name, expected in ref.items():
        problem, stats[name] = checks.compare(name, outs[name], expected, tol)
        if problem:
            return problem, stats
    return None, stats


def candidate_cgroup(channel: Path) -> str:
    """The candidate container's cgroup folder name, which the server wrote beside the socket once it
    had created that container (tasks.evaluate; the candidate can only read that folder)."""
    with open(channel / CANDIDATE_CGROUP_FILE, "rb") as f:
        return f.read(300).decode(errors="replace").strip()


def main(argv: list[str], doc: schema.CaseFile, started: list[tuple[Channel, subprocess.Popen[bytes]]]) -> int:
    """The evaluation (argv as tasks.harness.supervise has it, the cases it read, and the trusted workers
    it started, the baseline's and the empty call's, if any case is timed); the exit code."""
    laps = Laps()
    laps.spent["imports"] = process_age()
    began = time.monotonic() - laps.spent["imports"]  # the interpreter's start and the imports are the start's too
    task_dir, out, sock_path, cgroup, cores = Path(argv[0]), Path(argv[2]), argv[3], argv[4], parse_cores(argv[5])
    torch.manual_seed(0)
    if load_task(task_dir).device == "cuda":
        torch.zeros(1, device="cuda")
    laps.lap("task and device")
    listener = listen(sock_path)
    sup, trusted = _trusted_side(task_dir, doc, out, cores, started, laps)
    procs = [proc for _, proc in started]

    def finish(results: list[CaseResult], watch_note: str) -> int:
        return _finish(out, schema.SupervisorResult(results, sup.interference, watch_note, sup.phases), trusted, procs)

    write_progress(out, phase="start", step="waiting for the candidate's worker")
    try:
        chan, _ = accept(listener, doc.timing.connect_timeout_s)
        listener.close()  # one candidate worker: later connections are refused, never read
    except ChannelError as exc:
        return finish([CaseResult(c.id, Outcome.ERROR, str(exc)) for c in doc.cases], "unavailable")
    candidate = Worker("candidate", chan, trusted=False, timeout=doc.timing.call_timeout_s)
    watch, watch_note = _watch_candidate(sock_path, cgroup)
    laps.lap("candidate connects")
    write_progress(out, phase="start", step="the candidate's worker imports solution.py")
    with contextlib.suppress(ChannelError):  # gone: its hello says so
        candidate.chan.send({"op": "go"})  # only now may the submission run (tasks.harness.worker)
    error = hello(candidate)
    laps.lap("candidate hello")
    if error:
        print(f"start took: {laps.line()}", file=sys.stderr)
        return finish([CaseResult(c.id, Outcome.ERROR, error) for c in doc.cases], watch_note)
    sup.join(candidate, watch)
    write_progress(out, phase="start", step="the candidate's first call")
    sup.warm_up_candidate()
    laps.lap("candidate's first call")
    print(f"start took: {laps.line()}", file=sys.stderr)
    sup.phases["start"] = time.monotonic() - began
    results = sup.run()
    if watch is None:
        sup.interference.append(f"the candidate's CPU time could not be watched ({watch_note})")
    return finish(results, watch_note)


def _trusted_side(
    task_dir: Path,
    doc: schema.CaseFile,
    out: Path,
    cores: CoreLayout,
    started: list[tuple[Channel, subprocess.Popen[bytes]]],
    laps: Laps,
) -> tuple[Supervisor, list[Worker]]:
    """The supervisor with its trusted workers said hello, watched and warmed up (the reference's and
    the baseline's first calls), before the candidate's worker may run anything."""
    write_progress(out, phase="start", step="starting the baseline's worker")
    trusted = [
        Worker(name, chan, trusted=True, timeout=doc.timing.call_timeout_s)
        for name, (chan, _) in zip(TRUSTED_WORKERS, started, strict=False)  # none when nothing is timed
    ]
    for worker in trusted:
        hello(worker)
    laps.lap("trusted workers")
    baseline, null = (trusted[0], trusted[1]) if trusted else (None, None)
    sup = Supervisor(task_dir, doc, baseline, null, out, cores=cores)
    if cores.separated:
        pids = {name: proc.pid for name, (_, proc) in zip(TRUSTED_WORKERS, started, strict=False)}
        sup.calls.judge = JudgeWatch({"supervisor": os.getpid(), **pids}, cores.judge)
    write_progress(out, phase="start", step="the first calls of the reference and the baseline")
    try:
        sup.warm_up()
    except (torch.OutOfMemoryError, RuntimeError) as exc:  # a head start only: the cases meet it again
        print(f"warm-up stopped: {str(exc)[:500]}", file=sys.stderr)
    laps.lap("warm-up")
    return sup, trusted


def _watch_candidate(sock_path: str, cgroup: str) -> tuple[CpuWatch | None, str]:
    """The candidate container's CPU watch (its cgroup, which the server named beside the socket), and
    what the report says of it: its cgroup version, or why it is unavailable."""
    if cgroup not in ("1", "2"):
        return None, "unavailable"
    try:
        watch = for_leaf(candidate_cgroup(Path(sock_path).parent), cgroup)
        watch.ns()
    except (OSError, ValueError) as exc:
        return None, f"unavailable: {exc}"
    return watch, f"cgroup v{cgroup}"


def _finish(
    out: Path, result: schema.SupervisorResult, trusted: list[Worker], procs: list[subprocess.Popen[bytes]]
) -> int:
    tmp = out / "result.json.tmp"
    tmp.write_text(result.to_json())
    tmp.rename(out / "result.json")
    for worker in trusted:
        with contextlib.suppress(ChannelError):
            worker.chan.send({"op": "quit"})
    for proc in procs:
        proc.wait(10)
    sys.stdout.flush()
    os._exit(0)
