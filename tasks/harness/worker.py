"""``python -P -m tasks.harness.worker TASK_DIR SOCKET`` (the candidate's container) and the trusted
workers the supervisor starts in its own container, on an inherited socket: the baseline's
(``--baseline``) and the empty call's (``--null``).

A worker does only what the supervisor tells it, on buffers the supervisor owns:
    setup {case, scalars, buffers}   map the buffers, build the case's data dict, call the factory
                                     (the submission's ``setup`` through the task, or the baseline);
                                     answer with the callable's ``state``, if it has one
    call {case[, warm_up]}           call that case's callable once, synchronise the device, answer
                                     (warm_up, trusted workers only: autotuned kernels compiled ahead)
    batch {cases}                    call each case's callable in turn, back to back, then synchronise
                                     the device once and answer (the trusted batch mode: the device's
                                     queue stays full, so the host's launch gaps between calls hide)
    capture {cases}                  capture those calls, in turn, in one CUDA graph (TimingMethod.graph)
    batch {cases, graph: true}       replay that graph instead of calling, synchronise, answer: the
                                     graph reads whatever the supervisor wrote into the buffers since
    drop {case}                      forget that case's callable and buffers
    pin {cpus}                       every thread onto these cores (none: back to where it started)
    quit                             leave
The candidate's worker imports the task's ``preload`` modules, then waits for ``go`` before it imports
the submission: nothing the submission runs can share the GPU with the supervisor's warm-up, whose
autotuning choices (the baseline's configs) are kept for every later evaluation on this host
(tasks.harness.supervisor).
Every answer is ``{"ok": true}`` or ``{"ok": false, "error": "..."}``. Nothing a worker says is a
measurement: the supervisor times each call with its own clock and checks its outputs itself.

The empty call's worker maps no buffer (its callable touches none) and, for a CPU task, does not
import torch: on a two-core host the four processes that start an evaluation each spent ~1.5 s of
CPU importing it. Its calls still go the same way as the others' (the message, the callable, the
answer) and, for a CUDA task, end with the same synchronisation.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
import shutil
import socket
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kcoral.tasks.harness import autotune, pinning, schema
from kcoral.tasks.harness.channel import Channel, ChannelError, connect
from kcoral.tasks.harness.failures import describe
from kcoral.tasks.harness.taskdef import load_task

#: a check (public workloads only): failures are described with every frame
CHECK = os.environ.get("KCORAL_EVAL_CHECK") == "1"
#: seconds the candidate's worker waits for the supervisor's socket
CONNECT_TIMEOUT_S = 120.0


def serve(
    chan: Channel,
    device: Device,
    factory: Callable[[dict[str, Any]], Callable[[], None]] | None,
    hello: dict[str, Any],
    inside: str | None = None,
    before_setup: Callable[[], None] | None = None,
) -> None:
    """Answer the supervisor's operations until it says quit; a failure's description keeps only
    the frames below ``inside`` (the candidate's submission folder). ``before_setup`` runs at the
    start of each setup. Without a ``factory`` (the empty call's worker) only empty calls are set up."""
    gc.collect()
    gc.freeze()  # an honest worker's idle loop then costs next to no CPU between calls
    chan.send(hello)
    cases = Cases(device, factory, inside, before_setup)
    operations: dict[object, Callable[[dict[str, Any], list[int]], dict[str, Any] | None]] = {
        "setup": cases.setup,
        "drop": cases.drop,
        "pin": cases.pin,
        "call": cases.call,
        "capture": cases.capture,
        "batch": cases.batch,
    }
    while True:
        message, fds = chan.recv_with_fds()
        op = message.get("op")
        if op == "quit":
            return
        try:
            operation = operations.get(op)
            if operation is None:
                raise ValueError(f"unknown operation {op!r}")
            said = operation(message, fds)
        except Exception as exc:  # noqa: BLE001 - the callable's failure is the answer
            chan.send({"ok": False, "error": describe(exc, inside, full=CHECK)})
            continue
        finally:
            for fd in fds:
                os.close(fd)
        chan.send({"ok": True, "at": time.monotonic_ns(), **(said or {})})  # the stamp: Supervisor.call


class Cases:
    """A worker's cases as the supervisor set them up: each one's callable, its data and outputs, and
    the graphs captured of them; one method per operation (the module's docstring lists them)."""

    def __init__(
        self,
        device: Device,
        factory: Callable[[dict[str, Any]], Callable[[], None]] | None,
        inside: str | None,
        before_setup: Callable[[], None] | None,
    ) -> None:
        self.device = device
        self.factory = factory
        self.inside = inside
        self.before_setup = before_setup
        self.calls: dict[str, Callable[[], None]] = {}
        self.datas: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
        self.graphs: dict[tuple[str, ...], Any] = {}  # captured batches, by their cases

    def setup(self, message: dict[str, Any], fds: list[int]) -> dict[str, Any] | None:
        """The case's callable built; the answer carries what its ``state`` says of it (a KernelBench
        ModelNew's parameters: tasks.packs.kernelbench.state_report), for the supervisor to check."""
        if self.before_setup is not None:
            self.before_setup()
        data = dict(message.get("scalars") or {})
        outputs = {}
        if message.get("null"):  # the empty call touches no buffer: nothing to map
            call: Callable[[], None] = lambda: None  # noqa: E731
        elif self.factory is None:
            raise RuntimeError("the empty call's worker makes only empty calls")
        else:
            for wire, fd in zip(message["buffers"], _fds_for(message["buffers"], fds), strict=True):
                data[wire["name"]] = self.device.attach(wire, fd)
                if wire.get("role") == "out":
                    outputs[wire["name"]] = data[wire["name"]]
            call = self.factory(data)
        self.datas[message["case"]] = (data, outputs)
        self.calls[message["case"]] = call
        if not callable(call):
            raise TypeError(f"setup returned {type(call).__name__}, not a callable")
        state = getattr(call, schema.STATE_ATTRIBUTE, None)
        return None if state is None else {"state": state}

    def drop(self, message: dict[str, Any], fds: list[int]) -> None:
        self.calls.pop(message["case"], None)
        self.datas.pop(message["case"], None)
        for key in [key for key in self.graphs if message["case"] in key]:
            del self.graphs[key]
        self.device.release()

    def pin(self, message: dict[str, Any], fds: list[int]) -> None:
        """The supervisor times a CPU case: every thread onto its core (or back)."""
        cpus = message.get("cpus")
        pinning.pin(frozenset(int(c) for c in cpus) if cpus else None)

    def call(self, message: dict[str, Any], fds: list[int]) -> None:
        if message.get("warm_up") and self.inside is None:  # a trusted worker's first call
            with autotune.compile_ahead():
                self.calls[message["case"]]()
        else:
            self.calls[message["case"]]()
        self.device.sync()
        _written_in_place(*self.datas[message["case"]])

    def capture(self, message: dict[str, Any], fds: list[int]) -> None:
        cases = tuple(str(c) for c in message["cases"])
        share = next(iter(self.graphs.values()), None)
        self.graphs[cases] = self.device.capture([self.calls[case] for case in cases], share)

    def batch(self, message: dict[str, Any], fds: list[int]) -> None:
        cases = tuple(str(c) for c in message["cases"])
        if message.get("graph"):
            self.graphs[cases].replay()
        else:
            for case in cases:
                self.calls[case]()
        self.device.sync()
        for case in dict.fromkeys(cases):
            _written_in_place(*self.datas[case])


class Device:
    """The task's device as a worker uses it: buffers mapped (``maps``: all but the empty call's
    worker), calls waited for. Torch is imported only where one of them needs it: the empty call's
    worker of a CPU task never does. Everything is imported here, before a submission may run."""

    def __init__(self, kind: str, maps: bool) -> None:
        self.kind = kind
        self._sync: Callable[[], None] | None = None
        self._attach: Callable[[dict[str, Any], int | None, str], Any] | None = None
        if kind == "cuda":
            import torch  # noqa: PLC0415 - see the class

            torch.zeros(1, device="cuda")  # the context, before the first call
            self._sync = torch.cuda.synchronize
        if maps:
            from kcoral.tasks.harness import shared  # noqa: PLC0415 - imports torch

            self._attach = shared.attach

    def attach(self, wire: dict[str, Any], fd: int | None) -> Any:
        """A tensor over one of the supervisor's buffers (tasks.harness.shared)."""
        if self._attach is None:
            raise RuntimeError("this worker maps no buffer")
        return self._attach(wire, fd, self.kind)

    def sync(self) -> None:
        """Wait for the device's queued work (the CPU's is done when the call returns)."""
        if self._sync is not None:
            self._sync()

    def release(self) -> None:
        """Unmap the buffers no tensor here refers to any more (tasks.harness.shared.release_unused)."""
        if self._attach is not None and self.kind == "cuda":
            from kcoral.tasks.harness import shared  # noqa: PLC0415 - imported by __init__ already

            shared.release_unused()

    def capture(self, calls: list[Callable[[], None]], share: Any = None) -> Any:
        """One CUDA graph of ``calls`` made in turn, with memory of its own (what they allocate stays
        theirs for every replay). Capture records the calls' device work without running it: what a
        replay computes comes from the buffers as they are then. The empty call's graph holds nothing
        and its replay is the protocol's cost.

        ``share``: a graph of this process whose memory the new one shares (torch's private pool). The
        graphs of a measurement (a side's batch, and each call alone) are replayed one at a time, never
        together, and what a call allocates is its own scratch: one pool holds one call's scratch for
        them all, where a pool each held one per graph (on the pinned KDA task, 9 per worker)."""
        if self.kind != "cuda":
            raise RuntimeError("only a CUDA task's calls can be captured in a graph")
        import torch  # noqa: PLC0415 - see the class

        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the empty call's graph is empty, and torch says so
                with torch.cuda.graph(graph, pool=share.pool() if share is not None else None):
                    for call in calls:
                        call()
        except Exception as exc:
            raise RuntimeError(
                "capturing the calls in a CUDA graph failed (this task times replays of one: a call "
                f"must not synchronise with the host or change its work between calls): {exc}"
            ) from exc
        torch.cuda.synchronize()
        return graph


def _written_in_place(data: dict[str, Any], outputs: dict[str, Any]) -> None:
    """Refuse a callable that rebound an output in its data dict instead of writing into the buffer."""
    for name, buffer in outputs.items():
        if data.get(name) is not buffer:
            raise RuntimeError(
                f"the submission replaced data[{name!r}] instead of writing into it "
                "(the output buffers are the supervisor's: write into them in place)"
            )


def _fds_for(buffers: list[dict[str, Any]], fds: list[int]) -> list[int | None]:
    """Every buffer comes with one descriptor, in order (a CPU buffer's memfd, a CUDA buffer's
    exported allocation); one missing is None, and the buffer's attach refuses it."""
    it = iter(fds)
    return [next(it, None) for _ in buffers]


def _seed_kernel_cache() -> None:
    """Copy the supervisor's compiled kernels (a read-only mount; the trusted baseline's and the
    reference's) that this container's private cache lacks into it, so a candidate calling the same
    kernels does not compile them again. At the start, and again before each setup: the reference
    of a case is computed before the candidate's setup, so on a cold cache the kernels it compiled
    moments ago are there for the candidate's first call. Nothing in it is secret (compiled
    kernels and autotuning choices for the task's shapes), and nothing written here goes back."""
    seed, target = os.environ.get("KCORAL_SEED_CACHE"), os.environ.get("TRITON_CACHE_DIR")
    if not (seed and target and os.path.isdir(os.path.join(seed, "triton"))):
        return
    source = os.path.join(seed, "triton")
    for folder, _dirs, files in os.walk(source):
        into = os.path.join(target, os.path.relpath(folder, source))
        for name in files:
            path = os.path.join(into, name)
            if os.path.lexists(path):
                continue
            os.makedirs(into, exist_ok=True)
            try:
                shutil.copyfile(os.path.join(folder, name), path + ".seeding")
                os.replace(path + ".seeding", path)
            except OSError:  # the supervisor is writing it (or removed it): the next setup copies it
                with contextlib.suppress(OSError):
                    os.unlink(path + ".seeding")


def submission_module(manifest: dict[str, Any]) -> str:
    """The module the candidate's worker imports: solution, or the task's ``submission`` file's (a GPU MODE
    problem's submission.py); a name that is not a plain module name is solution."""
    name = str(manifest.get("submission", "solution.py")).removesuffix(".py")
    return name if name.isidentifier() else "solution"


def main(argv: list[str]) -> int:
    trusted = argv[0] in ("--baseline", "--null")
    if trusted:
        task_dir, chan = Path(argv[1]), Channel(socket.socket(fileno=int(argv[2])))
    else:
        task_dir = Path(argv[0])
        try:
            chan = connect(argv[1], CONNECT_TIMEOUT_S)
        except ChannelError as exc:
            print(f"kcoral worker: {exc}", file=sys.stderr)
            return 1
        _seed_kernel_cache()
    task = load_task(task_dir)
    device = Device(task.device, maps=argv[0] != "--null")
    hello: dict[str, Any] = {"ok": True}
    factory: Callable[[dict[str, Any]], Callable[[], None]] | None = None
    inside = None if trusted else os.getcwd()
    if argv[0] != "--null":
        import torch  # noqa: PLC0415 - not in the empty call's worker (see the module's docstring)

        mod = task.module()
        torch.manual_seed(0)
        factory = mod.baseline
    if inside is not None:
        for name in task.preload:  # the template's imports, while the supervisor's warm-up runs
            with contextlib.suppress(Exception):  # the submission meets it again, and is told
                importlib.import_module(name)
        try:
            if chan.recv().get("op") != "go":
                return 1
        except ChannelError:
            return 1
        # Last on the path (and the interpreter runs with -P): the submission cannot shadow torch or the harness.
        # A pack problem's own folders come before it (GPU MODE's submission imports its task.py and utils.py).
        if hasattr(mod, "importable"):
            mod.importable()
        sys.path.append(inside)
        entry = submission_module(task.manifest)
        try:
            solution = importlib.import_module(entry)
        except BaseException as exc:  # noqa: BLE001 - any failure to import is the submission's error
            hello = {"ok": False, "error": f"importing {entry}.py failed: " + describe(exc, inside, full=CHECK)}
        else:

            def factory(data: dict[str, Any]) -> Callable[[], None]:
                return mod.candidate(solution, data)

    with contextlib.suppress(ChannelError):
        serve(chan, device, factory, hello, inside, None if trusted else _seed_kernel_cache)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
