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
How a timed case is measured is tasks.harness.measure, one call's clock tasks.harness.timedcall (both parts
of :class:`Supervisor`); its run from start to result is tasks.harness.session.
It writes OUT_DIR/result.json (tasks.harness.schema.SupervisorResult) at the end, and
OUT_DIR/progress.json (where it is: a holdout probe by its number only, or a workload and whether it
is being checked or timed) as it goes, so that a deadline or a cancel can say where it struck.
"""

from __future__ import annotations

import contextlib
import gc
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from kcoral.tasks.harness import autotune, checks, pinning, schema
from kcoral.tasks.harness.callwatch import CallWatch
from kcoral.tasks.harness.cores import CoreLayout
from kcoral.tasks.harness.cpuwatch import CpuWatch, HeldWatch
from kcoral.tasks.harness.gpuclock import GpuClock
from kcoral.tasks.harness.gpuguard import GpuGuard
from kcoral.tasks.harness.keeper import Keeper
from kcoral.tasks.harness.link import CandidateGone, Worker
from kcoral.tasks.harness.measure import Measuring, TooSlow
from kcoral.tasks.harness.schema import CaseResult, Outcome
from kcoral.tasks.harness.taskdef import load_task
from kcoral.tasks.harness.timedcall import Side, gpu_clock, gpu_probe

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


def write_progress(out: Path, **where: Any) -> None:
    """OUT_DIR/progress.json, replaced atomically (the server reads it after a kill)."""
    tmp = out / "progress.json.tmp"
    tmp.write_text(json.dumps({**where, "at": time.time()}))
    tmp.rename(out / "progress.json")


@dataclass
class Supervisor(Measuring):
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
    #: the sides set up and not yet dropped (tasks.harness.timedcall)
    open_sides: list[Side] = field(default_factory=list)
    #: the GPU's free bytes before the submission's code could run (tasks.harness.measure)
    free_memory: int | None = None
    #: the keepers of the timed cores, by core (tasks.harness.keeper: :meth:`keep_cores`), and whether
    #: they keep them now (while a case is timed)
    keepers: dict[int, Keeper] = field(default_factory=dict)
    keeping: bool = False
    keeper_misses: int = 0

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
        self.clock: GpuClock | None = gpu_clock() if self.device == "cuda" else None
        probe = gpu_probe(self.device) if self.device == "cuda" else None
        self.gpu = GpuGuard(self.clock, probe, self.cfg.hot_c, self.cfg.cool_s, self.cfg.quiet_probe_ms)
        self.deadline = self.doc.deadline
        self._where: dict[str, Any] = {}
        self._written_at = 0.0
        self.probes_passed = 0

    def keep_cores(self, keepers: list[Keeper]) -> None:
        """The keepers of the timed cores (tasks.harness.keeper), idle until a case is timed; what the
        candidate's core's keeper runs is not others' work on that core (tasks.harness.callwatch)."""
        self.keepers = {k.core: k for k in keepers}
        mine = self.keepers.get(self.cores.candidate_core) if self.cores.candidate_core is not None else None
        self.calls.kept = mine.cpu_ms if mine is not None else None

    def join(self, candidate: Worker, watch: CpuWatch | None, held: HeldWatch | None = None) -> None:
        """The candidate's worker has connected and said hello: the cases can run (``watch``: its CPU,
        ``held``: how long others held it up; tasks.harness.cpuwatch)."""
        self.candidate, self.calls.watch, self.calls.held = candidate, watch, held
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
                self._drop([pending])
                pending = None
        try:
            with autotune.compile_ahead():
                self.mod.reference(inputs, case.params)
                self._sync()
        finally:
            if pending is not None:  # its answer is read whatever happened: the next one must be the next's
                pending.worker.answer()
                self._drop([pending])
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
        try:
            inputs = self.mod.make_inputs(case.params, self._seed(case.id, "warm-up"), self.device)
            side = self._side(self._candidate(), case, inputs, self.mod.output_specs(inputs), label="/warm-up")
        except torch.OutOfMemoryError:  # the submission may hold the memory: its first case says so
            return
        with contextlib.suppress(CandidateGone):  # every case will say so
            if self._setup(side, case.params, case) is None:
                side.worker.send({"op": "call", "case": side.case})
                self._precompute(until=side.worker)
                side.worker.answer()
        self._drop([side])

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
            self._drop()  # the case's buffers: the next case's may need their memory
            gc.collect()  # and any of them a reference cycle still holds
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

    # --- helpers -------------------------------------------------------------------------------

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


def _written(given: dict[str, torch.Tensor], sample: dict[str, Any]) -> list[str]:
    """The inputs whose buffers no longer hold the sample written into them before the call, bit for
    bit (a NaN written stays equal to itself)."""
    return [
        name
        for name, t in given.items()
        if not torch.equal(t.reshape(-1).view(torch.uint8), sample[name].reshape(-1).view(torch.uint8))
    ]
