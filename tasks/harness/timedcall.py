"""A side (a worker's buffers for one case) set up; one call on the supervisor's clock (a side's inputs
written, the caches flushed, the call made and its outputs copied, inside a window of
tasks.harness.callwatch; a call alone, or a batch of calls in one operation: TimingMethod.batch); and a
call's outputs judged. The :class:`Calling` part of tasks.harness.supervisor.Supervisor."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from kcoral.tasks.harness import checks, schema, shared
from kcoral.tasks.harness.callwatch import CallWatch
from kcoral.tasks.harness.cores import CoreLayout
from kcoral.tasks.harness.gpuclock import GpuClock, open_clock
from kcoral.tasks.harness.gpuguard import GpuGuard
from kcoral.tasks.harness.keeper import Keeper
from kcoral.tasks.harness.link import CandidateGone, Worker
from kcoral.tasks.harness.spots import Spots

_ns = time.perf_counter_ns
#: seconds a keeper may take to flush its core's caches (tasks.harness.keeper), at least, and per GiB
#: flushed; later, the call's iteration is left out as disturbed (only work on that core outside the
#: calls keeps it from it: an io_uring storm armed there took 244 s of CI with a flat 0.25 s)
KEEPER_FLUSH_S, KEEPER_FLUSH_S_PER_GIB = 0.02, 1.0


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
    #: the values other than tensors its worker was given at set-up, once: every sample must hold the same
    scalars: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.snapshot = {name: torch.empty_like(t) for name, t in self.outputs.items()}

    def release(self) -> None:
        """Give up this process's hold on the side's buffers (its worker dropped its own): whoever still
        refers to the side holds no memory through it, and a buffer never sent closes its descriptor
        (which would keep a CUDA allocation alive). Sides set up anew within a measurement while the old
        ones were still referred to once ran the pinned KDA task out of an H100's memory."""
        for b in self.bufs:
            if b.fd is not None:
                os.close(b.fd)
                b.fd = None
        self.inputs, self.outputs, self.bufs, self.snapshot = {}, {}, [], {}


def _not_tensors(values: dict[str, Any]) -> dict[str, Any]:
    """The values of a sample that are not tensors (numbers, constants): a worker's at set-up, once."""
    return {k: v for k, v in values.items() if not isinstance(v, torch.Tensor)}


def _same_scalars(side: Side, sample: dict[str, Any]) -> None:
    """Raise unless ``sample``'s values other than tensors are those ``side``'s worker was given at set-up:
    a worker gets them once (a CUDA graph replays them as captured), so a problem whose draws change them
    would be judged on inputs its calls never saw (the task's make_inputs must keep them per case)."""
    drawn = _not_tensors(sample)
    if drawn != side.scalars and repr(drawn) != repr(side.scalars):  # repr: a NaN equals itself
        changed = sorted(k for k in drawn.keys() | side.scalars.keys() if drawn.get(k) != side.scalars.get(k))
        raise RuntimeError(
            f"the task's inputs other than tensors change from one draw to the next ({', '.join(changed)[:200]}): "
            "a worker is given them once per case, so the task cannot be judged as it is"
        )


class Calling:
    """The supervisor's timed calls (a part of tasks.harness.supervisor.Supervisor, which holds this state)."""

    #: the task's module (tasks.harness.taskdef): its inputs and outputs
    mod: Any
    device: str
    #: the secret key the samples are drawn from
    key: bytes
    #: written before every call: the caches hold none of the previous call's data
    flush: torch.Tensor
    calls: CallWatch
    gpu: GpuGuard
    candidate: Worker | None
    null: Worker | None
    interference: list[str]
    last_call_ms: float
    cores: CoreLayout
    #: the keepers of the timed cores, by core (tasks.harness.keeper), and whether they keep them now
    keepers: dict[int, Keeper]
    keeping: bool
    #: keeper flushes not done in time in the measurement so far (each leaves its iteration out)
    keeper_misses: int
    #: the sides set up and not yet dropped (:meth:`_side`, :meth:`_drop`)
    open_sides: list[Side]

    def _side(
        self,
        worker: Worker,
        case: schema.Case,
        inputs: dict[str, Any],
        specs: dict[str, tuple[tuple[int, ...], str]],
        null: bool = False,
        label: str = "",
    ) -> Side:
        """A new side: the buffers of ``inputs``' tensors and of the outputs ``specs`` describes, for
        ``worker``. It is open until :meth:`_drop` (at the latest when its case ends)."""
        tensors = {k: v for k, v in inputs.items() if isinstance(v, torch.Tensor)}
        bufs = [shared.allocate(k, tuple(v.shape), v.dtype, self.device) for k, v in tensors.items()]
        bufs += [
            shared.allocate(k, tuple(shape), getattr(torch, dtype), self.device, role="out")
            for k, (shape, dtype) in specs.items()
        ]
        side = Side(
            worker,
            case.id + ("/null" if null else label),
            {b.name: b.tensor for b in bufs[: len(tensors)]},
            {b.name: b.tensor for b in bufs[len(tensors) :]},
            bufs,
        )
        self.open_sides.append(side)
        return side

    def _drop(self, sides: list[Side] | None = None) -> None:
        """``sides`` (None: every open one) forgotten: each worker drops the case's callable, graphs and
        mappings, and this process its buffers (:meth:`Side.release`; their device memory is unmapped at
        the next allocation: tasks.harness.shared). A case's sides are dropped when it ends, a
        measurement's when it ends."""
        gone = list(self.open_sides) if sides is None else sides
        for side in gone:
            with contextlib.suppress(CandidateGone):  # a candidate that is gone holds nothing of ours
                side.worker.ask({"op": "drop", "case": side.case})
            side.release()
        self.open_sides = [s for s in self.open_sides if all(s is not g for g in gone)]
        self.calls.settled()  # the candidate may work while it drops

    def _setup(self, side: Side, params: dict[str, Any], case: schema.Case, null: bool = False) -> str | None:
        """Map the side's buffers into its worker and build its callable, on decoy inputs (a sample
        drawn from the key that is never timed or checked: nothing computed here is of use later)."""
        decoy = self.mod.make_inputs(params, self._seed(side.case, "decoy"), self.device)
        for name, t in side.inputs.items():
            t.copy_(decoy[name])
        poison(side.outputs)
        scalars = side.scalars = _not_tensors(decoy)
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
        check_state = getattr(self.mod, "check_state", None)
        if error is None and check_state is not None and side.worker is self.candidate:
            error = check_state(side.worker.said.get("state")) or None  # here, not in the candidate's process
        return error

    def _seed(self, case_id: str, label: str) -> int:
        digest = hmac.new(self.key, f"{case_id}/{label}".encode(), hashlib.sha256).digest()
        return int.from_bytes(digest[:8], "little") >> 1

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
            return compare_outputs(outs, expected, tol)
        try:
            reason = check(inputs, outs)
        except Exception as exc:  # noqa: BLE001 - the problem's check failing on these outputs is their failure
            reason = f"check_implementation raised {type(exc).__name__}: {exc}"
        return (str(reason)[:2000] or None), {}

    def call(self, side: Side, sample: dict[str, Any]) -> tuple[float, dict[str, torch.Tensor], str | None]:
        """(ms, the side's snapshot of the outputs, error): inputs written, caches flushed, the call
        made and its outputs copied, all on the supervisor's clock. The candidate's CPU time before
        the call (since its previous call, and while its inputs were written) goes to ``self.calls``."""
        _same_scalars(side, sample)
        poison(side.outputs)
        if self.device == "cuda":
            shared.reset_persisting_l2()
            self._wait_quiet()
        keeper = self._keeper_flushed(side.worker)
        spots = Spots(side.outputs)
        window = self.calls.open(side.worker is self.candidate)
        self.calls.judging(window, self._watched(side.worker))
        self._sync()
        t0 = _ns()
        for name, t in side.inputs.items():
            t.copy_(sample[name])
        self.flush.add_(1.0)
        self._sync()
        self.calls.written(window)
        with keeper.calling() if keeper else contextlib.nullcontext():
            error = side.worker.ask({"op": "call", "case": side.case})
        self.calls.answered(window)
        lag = self._answer_lag(side.worker)
        spots.read(side.outputs)
        for name, t in side.outputs.items():
            side.snapshot[name].copy_(t)
        self._sync()
        elapsed = (_ns() - t0 - lag) / 1e6
        self.calls.close(window)
        error = error or spots.changed(side.snapshot) or (self._gpu_ran_on() if side.worker is self.candidate else None)
        if side.worker is not self.candidate:
            poison(side.outputs)  # the baseline's answer never waits in memory for the candidate's call
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
        batch's time is its calls' and the protocol's (the empty call's batch measures that); on a GPU the
        clock stops once this process's own tiny kernel has run after the answer
        (:meth:`_until_the_gpu_turns_here`). ``graph``: the worker replays the batch's captured CUDA graph
        (TimingMethod.graph) instead of calling."""
        worker = sides[0].worker
        if worker is not self.null:
            for side, sample in zip(sides, samples, strict=True):
                _same_scalars(side, sample)
        keeper = self._keeper_flushed(worker)
        mine = list({id(side): side for side in sides}.values())  # the empty call's batch repeats one side
        spots = [Spots(side.outputs) for side in mine]
        window = self.calls.open(worker is self.candidate)
        for side, sample in zip(sides, samples, strict=True):
            poison(side.outputs)
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
        with keeper.calling() if keeper else contextlib.nullcontext():
            error = worker.ask({"op": "batch", "cases": [side.case for side in sides], "graph": graph})
        self.calls.answered(window)
        if self.device == "cuda":
            self._until_the_gpu_turns_here()
        elapsed = (_ns() - t0 - self._answer_lag(worker)) / 1e6
        self.calls.close(window)
        for side, spot in zip(mine, spots, strict=True):
            spot.read(side.outputs)
            for name, t in side.outputs.items():
                side.snapshot[name].copy_(t)
        self._sync()
        for side, spot in zip(mine, spots, strict=True):
            error = error or spot.changed(side.snapshot)
            if worker is not self.candidate:
                poison(side.outputs)
        if worker is self.candidate:
            error = error or self._gpu_ran_on()
            self.last_call_ms = elapsed / len(sides)
        return elapsed / len(sides), [side.snapshot for side in sides], error

    def _until_the_gpu_turns_here(self) -> None:
        """A tiny kernel of this process, waited for, on a batch's clock: the GPU runs it only once the work
        other processes queued before it is done, or their time slice is up. A worker that answers before
        its batch's work is done (its synchronisation patched out) then has that work timed all the
        same, or as much as a time slice holds (the rest: :meth:`_gpu_ran_on`); a batch's outputs are
        copied after the clock, where that copy would have waited for it off the clock."""
        self.flush[:1].add_(1.0)
        torch.cuda.synchronize()

    def _gpu_ran_on(self) -> str | None:
        """Why the candidate's call is an error: the GPU still ran another context's work once its outputs
        were copied (tasks.harness.gpuguard.GpuGuard.ran_on), or None (and on a CPU)."""
        if self.device != "cuda":
            return None
        busy = self.gpu.ran_on()
        if busy is None:
            return None
        return (
            f"the GPU was still busy after the call answered (the fastest of three probe kernels took {busy:.3f} "
            f"ms; an idle GPU answers in under {self.gpu.quiet_probe_ms} ms): a call must finish its work "
            "before it returns"
        )

    def _keeper_flushed(self, worker: Worker) -> Keeper | None:
        """The keeper of the core ``worker``'s calls run on while a case is timed (None: the supervisor's
        own core, or nothing timed now), once it has flushed that core's caches on a CPU task (the
        supervisor's flush, on its own core, reaches only the caches the cores share). A keeper kept
        from its core past the limit (KEEPER_FLUSH_S...) makes the call's iteration disturbed."""
        if not self.keeping:
            return None
        core = self.cores.candidate_core if worker is self.candidate else self.cores.workers
        keeper = self.keepers.get(core) if core is not None else None
        nbytes = self.flush.numel() * self.flush.element_size()
        limit = KEEPER_FLUSH_S + KEEPER_FLUSH_S_PER_GIB * nbytes / 2**30
        if keeper is not None and self.device == "cpu" and not keeper.flush(nbytes, limit):
            self.calls.waited += limit * 1e3
            self.keeper_misses += 1
        return keeper

    def _answer_lag(self, worker: Worker) -> int:
        """ns to take off a call's time for the hand-off of its answer: a trusted worker on the
        supervisor's own core (a lease of 2 cores) answers while this process sleeps, which runs again
        only once that worker sleeps (the rest of its loop, then the switch back); the candidate's
        answer, on a core of its own, is seen as it comes (this process polls). Without this the empty
        call, made on the supervisor's core, took more off the candidate's calls than its hand-off
        cost them: identical code 1.02-1.07x with the candidate's core kept (tasks.harness.keeper),
        0.98-1.03x with every side on that core, 0.97-1.01x with this on the dev VM; the lags were
        36-141 us (bench/results/two-core-keeper-dev-vm). The worker's stamp is taken as it sends
        (CLOCK_MONOTONIC); the candidate's stamp is never read."""
        return worker.answer_lag_ns if worker.trusted and self.cores.only_candidate_crosses else 0

    def _watched(self, worker: Worker) -> list[str]:
        return self.calls.watched(worker.trusted, worker.name)

    def _sync(self) -> None:
        if self.device == "cuda":
            torch.cuda.synchronize()

    def _wait_quiet(self) -> None:
        """Wait for a GPU no other context keeps busy (tasks.harness.gpuguard); flagged once if never."""
        flag = self.gpu.wait_quiet()
        if flag:
            self.interference.append(flag)


def gpu_probe(device: str) -> Callable[[], float]:
    """ms for one tiny kernel and a device-wide synchronize (tasks.harness.gpuguard's probe)."""
    one = torch.zeros(1, device=device)

    def probe() -> float:
        t = _ns()
        one.add_(1.0)
        torch.cuda.synchronize()
        return (_ns() - t) / 1e6

    return probe


def gpu_clock() -> GpuClock | None:
    """The leased GPU's NVML readings (None where NVML cannot be reached: no clock figures then)."""
    try:
        return open_clock(str(torch.cuda.get_device_properties(0).uuid))
    except (RuntimeError, AttributeError):
        return None


def poison(tensors: dict[str, torch.Tensor]) -> None:
    for t in tensors.values():
        t.fill_(math.nan) if t.is_floating_point() else t.fill_(-1)


def compare_outputs(
    outs: dict[str, torch.Tensor], ref: dict[str, torch.Tensor], tol: checks.Tolerance
) -> tuple[str | None, dict[str, dict[str, float]]]:
    stats: dict[str, dict[str, float]] = {}
    for name, expected in ref.items():
        problem, stats[name] = checks.compare(name, outs[name], expected, tol)
        if problem:
            return problem, stats
    return None, stats
