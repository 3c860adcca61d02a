"""One running container of a job's group (runner.executor): what the threads around it report (its
exit, its log's size and breaches), and those threads: one waits for its exit, one copies its output
into the job's log, each piece with its stream, up to the log's budget (past it a breach, or with a
step's own ``log_keep`` the rest dropped and counted). A log that cannot be written (a full disk) or
an output stream that breaks (the engine lost) stops the job without blaming it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker.errors
import requests.exceptions

from kcoral.protocol.errors import InfrastructureError, InsufficientStorage
from kcoral.protocol.framing import SERVER
from kcoral.protocol.models import Verdict
from kcoral.runner.containers import DOCKER_ERRORS
from kcoral.runner.enginelog import ContainerOutput, EngineStreamError, missed_output
from kcoral.runner.errors import DISK_FULL, LOG_DISK_FULL
from kcoral.runner.joblog import LogWriter
from kcoral.runner.logsetup import child_thread
from kcoral.runner.plan import ContainerStep
from kcoral.runner.standby import Fit, Standby
from kcoral.runner.wholelines import WholeLines

log = logging.getLogger("kcoral.executor")


@dataclass
class Watch:
    """What the threads around one container report to the watch loop."""

    exited: threading.Event = field(default_factory=threading.Event)
    exit_status: int | None = None
    log_bytes: int = 0
    log_over: bool = False
    #: why the server could not write the job's log (a full disk): the job is stopped, not blamed
    log_error: str = ""
    #: the disk was full for a write of the job's log: the log it has is partial
    disk_full: bool = False
    #: why the engine's log stream of the job broke (the engine lost): the job is stopped, not blamed
    log_cut: str = ""
    #: when the container started and when its exit was seen (the server's clock, Unix seconds)
    started: float | None = None
    ended: float | None = None
    #: bytes past the step's own log_keep that were dropped (a step with log_keep only)
    dropped: int = 0
    #: each stream's unfinished line, held until it ends (the streams do not interleave inside a line)
    lines: WholeLines = field(default_factory=WholeLines)


@dataclass
class Member:
    """One running container of a group, with the threads that follow it."""

    step: ContainerStep
    container: Any
    log: LogWriter
    watch: Watch = field(default_factory=lambda: Watch())
    threads: list[threading.Thread] = field(default_factory=list)
    log_start: int = 0
    budget: int = 0
    #: past its budget the output is dropped (the step's own log_keep), not a breach
    drop: bool = False
    #: the standby this member runs in, and how the job's folders map onto its own
    standby: tuple[Fit, Standby] | None = None
    #: the container's output, attached before it started (or took its job)
    output: ContainerOutput | None = None

    @property
    def output_dir(self) -> Path | None:
        """Where the step's output is while it runs (a standby's own folder, for one in a standby)."""
        out = self.step.output_dir
        if out is None or self.standby is None:
            return out
        fits, taken = self.standby
        return taken.folders[fits.folders.index(out)] if out in fits.folders else out

    def begin(self, log_cap: int) -> None:
        """It runs: its log's budget (what the job's log has room for, or the step's own log_keep), and the
        threads that wait for its exit and copy its output."""
        self.log_start = self.log.size
        self.budget = log_cap - self.log_start
        keep = self.step.log_keep
        if keep is not None and keep < self.budget:
            self.budget = keep
        drop = self.drop = keep is not None and self.budget == keep
        self.threads = [
            threading.Thread(
                target=_wait_exit, args=(self.container, self.watch), daemon=True, name=child_thread("wait")
            ),
            threading.Thread(
                target=_copy_log,
                args=(self.container, self.output, self.log, self.budget, self.watch, drop),
                daemon=True,
                name=child_thread("log"),
            ),
        ]
        for t in self.threads:
            t.start()

    def complete_log(self) -> None:
        """Once it has exited (or was killed): its threads joined, what a broken stream missed read from the
        engine's stored log, and the bytes past a step's own log_keep noted in the log."""
        self.watch.exited.wait(30)
        for t in self.threads:
            t.join(10)
        if self.output is not None and not any(t.is_alive() for t in self.threads):
            _catch_up_log(self.container, self.output, self.log, self.budget, self.watch, self.drop)
        if self.watch.dropped:
            _note_dropped(self.log, self.step.name, self.budget, self.watch)


def settle_breach(killed: tuple[Verdict, str] | None, log_over: bool, cap: int) -> tuple[Verdict, str] | None:
    """The breach to report once the whole log is known. A job whose log went over the cap broke the
    output limit, whether the live stream saw it in time or not: one that ended by itself first, or
    was stopped at its deadline while the stream lagged behind the engine, gets output_limit too
    (a cancel stays a cancel)."""
    if log_over and (killed is None or killed[0] is Verdict.timeout):
        return (Verdict.output_limit, f"the job printed more than {cap} bytes; the log keeps the first {cap}")
    return killed


def _wait_exit(container: Any, watch: Watch) -> None:
    while True:
        try:
            watch.exit_status = int(container.wait(timeout=3600)["StatusCode"])
            watch.ended = time.time()
            break
        except requests.exceptions.ReadTimeout:
            continue
        except DOCKER_ERRORS as exc:
            log.warning("waiting for %s failed: %s", container.id[:12], exc)
            break
    watch.exited.set()


def _copy_log(
    container: Any, output: ContainerOutput, sink: LogWriter, cap: int, watch: Watch, drop: bool = False
) -> None:
    """The container's output into the log, each piece with its stream, up to ``cap`` bytes; past
    it a breach (``log_over``), or with ``drop`` the rest is counted in ``dropped`` and goes nowhere."""
    try:
        for batch in output.batches():
            _keep(sink, watch.lines.feed(batch), cap, watch, drop)
        _keep(sink, watch.lines.rest(), cap, watch, drop)
        watch.exited.wait()  # an attach ends the same way when the container exits and when the engine goes
        if watch.exit_status is None:
            raise EngineStreamError("the output stream ended, and the container's exit was not seen")
    except DOCKER_ERRORS as exc:  # the job's output can no longer be watched: it is stopped
        watch.log_cut = _log_cut_reason(exc)
        log.error("log stream of %s broke: %s", container.id[:12], _engine_said(exc))
    except OSError as exc:
        _log_failed(watch, exc)
        log.error("job log of %s: %s", container.id[:12], watch.log_error)


def _log_cut_reason(exc: BaseException) -> str:
    """Why a job whose output stream from the engine broke was ended."""
    if isinstance(exc, docker.errors.APIError):
        what = "the Docker engine stopped sending the job's output"
    else:
        what = "the connection to the Docker engine broke while the job ran"
    return f"{what} ({_engine_said(exc)}); the job was ended: run it again"


def _engine_said(exc: BaseException) -> str:
    """An engine error's own words: the message inside the wrappers (requests wraps urllib3's error,
    which wraps the socket's), not their tuple reprs."""
    if isinstance(exc, docker.errors.APIError):
        return str(exc.explanation or exc)
    while exc.args and isinstance(exc.args[0], BaseException):
        exc = exc.args[0]
    return str(exc.args[0]) if exc.args and isinstance(exc.args[0], str) else str(exc)


def _keep(sink: LogWriter, batch: list[tuple[int, bytes]], cap: int, watch: Watch, drop: bool) -> None:
    """A batch of output into the log (one write), as far as the cap allows."""
    room = cap - watch.log_bytes
    kept: list[tuple[int, bytes]] = []
    over = 0
    for stream, chunk in batch:
        piece = chunk[: max(room, 0)]
        if piece:
            kept.append((stream, piece))
            room -= len(piece)
        over += len(chunk) - len(piece)
    if kept:
        sink.extend(kept)
        watch.log_bytes += sum(len(piece) for _, piece in kept)
    if over:
        if drop:
            watch.dropped += over
        else:
            watch.log_over = True


def open_log(path: Path, on_append: Callable[[], None] | None = None) -> LogWriter:
    try:
        return LogWriter(path, on_append)
    except OSError as exc:
        if exc.errno in DISK_FULL:
            raise InsufficientStorage(LOG_DISK_FULL) from None
        raise InfrastructureError(_log_write_error(exc)) from None


def _log_failed(watch: Watch, exc: OSError) -> None:
    """The job's log could not be written: the job is stopped for it (and where the disk is full,
    the log it has is partial: runner.runplan removes it)."""
    watch.log_error = _log_write_error(exc)
    watch.disk_full = watch.disk_full or exc.errno in DISK_FULL


def _log_write_error(exc: OSError) -> str:
    if exc.errno in DISK_FULL:
        return LOG_DISK_FULL
    return f"the server could not write the job's log ({exc.strerror or exc}), so the job was stopped"


def _note_dropped(sink: LogWriter, name: str, kept: int, watch: Watch) -> None:
    note = f"\n[kcoral: the {name} printed {watch.dropped} bytes more than the {kept} kept here; they were dropped]\n"
    try:
        sink.append(SERVER, note.encode())
        watch.log_bytes += len(note)
    except OSError as exc:
        _log_failed(watch, exc)


def _catch_up_log(
    container: Any, output: ContainerOutput, sink: LogWriter, cap: int, watch: Watch, drop: bool = False
) -> None:
    """After the output stream broke off: what the engine's stored log holds past what it brought
    (a stream that ended with the container has every byte: nothing is read)."""
    if not watch.log_cut or watch.log_over or watch.log_error:
        return
    try:
        try:
            for batch in missed_output(container, output.received):
                _keep(sink, watch.lines.feed(batch), cap, watch, drop)
        except DOCKER_ERRORS as exc:
            log.warning("reading the stored log of %s failed: %s", container.id[:12], exc)
        _keep(sink, watch.lines.rest(), cap, watch, drop)
    except OSError as exc:
        _log_failed(watch, exc)
