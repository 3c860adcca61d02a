"""The supervisor's run, from its trusted workers' hello to result.json (tasks.harness.supervise starts
the workers, then calls :func:`main`): the supervisor made and warmed up before the candidate's worker
may run anything, the candidate's worker accepted on the socket and told to go, its CPU watched
through its container's cgroup, the cases run, the result written."""

from __future__ import annotations

import contextlib
import gc
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import torch

from kcoral.tasks.harness import schema
from kcoral.tasks.harness.channel import Channel, ChannelError, accept
from kcoral.tasks.harness.cores import CoreLayout
from kcoral.tasks.harness.cores import parse as parse_cores
from kcoral.tasks.harness.cpuwatch import CpuWatch, HeldWatch, for_leaf, held_for_leaf
from kcoral.tasks.harness.interference import JudgeWatch
from kcoral.tasks.harness.keeper import Keeper
from kcoral.tasks.harness.link import Worker, hello
from kcoral.tasks.harness.roles import CANDIDATE_CGROUP_FILE, TRUSTED_WORKERS
from kcoral.tasks.harness.schema import CaseResult, Outcome
from kcoral.tasks.harness.supervisor import Laps, Supervisor, write_progress
from kcoral.tasks.harness.taskdef import load_task


def process_age() -> float:
    """Seconds since this process started (its interpreter's start-up and imports included)."""
    with open("/proc/self/stat") as f:
        ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    return time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")


def candidate_cgroup(channel: Path) -> str:
    """The candidate container's cgroup folder name, which the server wrote beside the socket once it
    had created that container (tasks.evaluate; the candidate can only read that folder)."""
    with open(channel / CANDIDATE_CGROUP_FILE, "rb") as f:
        return f.read(300).decode(errors="replace").strip()


def main(
    argv: list[str],
    doc: schema.CaseFile,
    started: list[tuple[Channel, subprocess.Popen[bytes]]],
    listener: socket.socket,
    keepers: list[Keeper] | None = None,
) -> int:
    """The evaluation (argv as tasks.harness.supervise has it, the cases it read, the trusted workers it
    started, the baseline's and the empty call's, if any case is timed, the socket the candidate's
    worker connects to, listening already, and the keepers of the timed cores, tasks.harness.keeper);
    the exit code."""
    laps = Laps()
    laps.spent["imports"] = process_age()
    began = time.monotonic() - laps.spent["imports"]  # the interpreter's start and the imports are the start's too
    task_dir, out, sock_path, cgroup, cores = Path(argv[0]), Path(argv[2]), argv[3], argv[4], parse_cores(argv[5])
    torch.manual_seed(0)
    if load_task(task_dir).device == "cuda":
        torch.zeros(1, device="cuda")
    laps.lap("task and device")
    sup, trusted = _trusted_side(task_dir, doc, out, cores, started, laps)
    sup.keep_cores(keepers or [])
    procs = [proc for _, proc in started]

    def finish(results: list[CaseResult], watch_note: str) -> int:
        for k in keepers or []:
            k.close()
        return _finish(out, schema.SupervisorResult(results, sup.interference, watch_note, sup.phases), trusted, procs)

    write_progress(out, phase="start", step="waiting for the candidate's worker")
    try:
        chan, _ = accept(listener, doc.timing.connect_timeout_s)
        listener.close()  # one candidate worker: later connections are refused, never read
    except ChannelError as exc:
        return finish([CaseResult(c.id, Outcome.ERROR, str(exc)) for c in doc.cases], "unavailable")
    # the candidate's silence is waited for until the evaluation's deadline less its margin at most, so that
    # it still gets a report; the trusted workers keep the call's limit: once the candidate is given up, the
    # rest (its later cases' errors, the clean-up) asks them, and a wait cut to nothing would make a stalled
    # candidate the judge's failure (a SIGSTOPped worker did: infrastructure_error, exit 125)
    candidate = Worker(
        "candidate",
        chan,
        trusted=False,
        timeout=doc.timing.call_timeout_s,
        deadline=doc.deadline,
        margin=doc.timing.deadline_margin_s,
    )
    watch, held, watch_note = _watch_candidate(sock_path, cgroup)
    laps.lap("candidate connects")
    write_progress(out, phase="start", step="the candidate's worker imports solution.py")
    with contextlib.suppress(ChannelError):  # gone: its hello says so
        candidate.chan.send({"op": "go"})  # only now may the submission run (tasks.harness.worker)
    error = hello(candidate)
    laps.lap("candidate hello")
    if error:
        print(f"start took: {laps.line()}", file=sys.stderr)
        return finish([CaseResult(c.id, Outcome.ERROR, error) for c in doc.cases], watch_note)
    sup.join(candidate, watch, held)
    write_progress(out, phase="start", step="the candidate's first call")
    sup.warm_up_candidate()
    laps.lap("candidate's first call")
    print(f"start took: {laps.line()}", file=sys.stderr)
    sup.phases["start"] = time.monotonic() - began
    # what the start made (torch, the task's modules: ~165,000 objects) out of the collector's sight: a
    # full pass over them took 145 ms in the CPU image (0.2 ms once frozen), and one may come at any
    # allocation, a timed window's included; the measurements collect between their iterations
    gc.freeze()
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
    sup.note_free_memory()  # before the candidate's worker may import the submission
    laps.lap("warm-up")
    return sup, trusted


def _watch_candidate(sock_path: str, cgroup: str) -> tuple[CpuWatch | None, HeldWatch | None, str]:
    """The candidate container's CPU watch and held-up watch (its cgroup, which the server named beside the
    socket), and what the report says of them: its cgroup version and whether its pressure stalls are
    read, or why it is unavailable."""
    if cgroup not in ("1", "2"):
        return None, None, "unavailable"
    try:
        leaf = candidate_cgroup(Path(sock_path).parent)
        watch = for_leaf(leaf, cgroup)
        watch.ns()
        held = held_for_leaf(leaf, cgroup)
    except (OSError, ValueError) as exc:
        return None, None, f"unavailable: {exc}"
    return watch, held, f"cgroup v{cgroup}" + (", pressure stalls" if held is not None else "")


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
