"""Containers started ahead of time: a job's container start (~0.2 s of a trivial job on the dev VM)
off its critical path.

A standby is a container created and started with every option a job's container gets (the
lease's devices and cores, the limits, the read-only root, the user, the mount targets), running
only :data:`LAUNCHER`: it waits on its stdin for the job's command, environment and working
directory, then ``exec``s the command, so the job is the same process in the same sandbox it would
have had in a container of its own. A standby never runs more than one job: once taken it is the
job's container, removed with it, and the next one is started in the background.

Only a job of one container whose command is the server's interpreter fits (its folders are swapped
in by rename at the hand-over, see :class:`Fit`); anything else starts a container of its own.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger("kcoral.standby")

LABEL_STANDBY = "kcoral.standby"
#: the slot (lease) a standby was started for
LABEL_SLOT = "kcoral.slot"
#: how long a job waits for its slot's standby that is still starting, before it starts its own
MAKING_WAIT_S = 1.0

#: what a standby runs (``python -I -S -c``: no site, no user paths, nothing read from the image's
#: folders): one JSON document on stdin, then the job in its place; an empty stdin (the server
#: went away) ends it quietly. The job's stdin is /dev/null, as in a container of its own.
LAUNCHER = """\
import json, os, sys
raw = sys.stdin.buffer.read()
if not raw:
    sys.exit(0)
spec = json.loads(raw)
fd = os.open("/dev/null", os.O_RDONLY)
os.dup2(fd, 0)
os.close(fd)
os.chdir(spec["cwd"])
env = dict(os.environ)
env.update(spec["env"])
try:
    os.execvpe(spec["argv"][0], spec["argv"], env)
except OSError as exc:
    sys.stderr.write(f"kcoral: cannot start {spec['argv'][0]}: {exc.strerror}\\n")
    sys.exit(127)
"""

#: options that differ from job to job and are handed over on stdin or set at the hand-over (the
#: working directory is handed over too, but kept in the key: every job that fits has the same)
_PER_JOB = ("command", "environment", "labels", "volumes", "name", "detach")


@dataclass(frozen=True)
class Fit:
    """How a job's container options map onto a standby: ``key`` names every option the standby
    must have been started with; ``folders`` are the job's own folders it mounts (in the order of
    their mount targets), swapped into the standby's by rename."""

    key: str
    folders: tuple[Path, ...]
    targets: tuple[str, ...]
    modes: tuple[str, ...]


def fit(options: dict[str, Any], job_root: Path, python: str) -> Fit | None:
    """The standby that can run a container with ``options`` (one of a job's folder ``job_root``),
    or None when none can: a command that is not the server's interpreter, a folder of the job's
    that is not a directory."""
    command = options.get("command") or []
    if not command or command[0] != python:
        return None
    shared, own = [], []
    for source, mount in sorted(options.get("volumes", {}).items(), key=lambda kv: kv[1]["bind"]):
        path = Path(source)
        if path.is_relative_to(job_root):
            own.append((path, mount["bind"], mount["mode"]))
        else:
            shared.append((source, mount["bind"], mount["mode"]))
    if any(path.exists() and not path.is_dir() for path, _, _ in own):
        return None
    fixed = {k: v for k, v in options.items() if k not in _PER_JOB}
    doc = {"options": fixed, "shared": shared, "own": [(bind, mode) for _, bind, mode in own]}
    key = hashlib.sha256(json.dumps(doc, sort_keys=True, default=repr).encode()).hexdigest()[:16]
    return Fit(key, tuple(p for p, _, _ in own), tuple(b for _, b, _ in own), tuple(m for _, _, m in own))


def hand_over_message(options: dict[str, Any]) -> bytes:
    """What the launcher reads: the job's command, environment and working directory."""
    doc = {"argv": options["command"], "env": options.get("environment") or {}, "cwd": options["working_dir"]}
    return json.dumps(doc).encode()


@dataclass
class Standby:
    """A started container waiting for one job, and its folders (one per own folder of the Fit)."""

    container: Any
    key: str
    root: Path
    folders: tuple[Path, ...]


@dataclass
class StandbyPool:
    """At most one standby per lease (by name), kept ready for the next job that fits it."""

    root: Path
    _ready: dict[str, Standby] = field(default_factory=dict)
    _making: set[str] = field(default_factory=set)
    #: the standbys taken for a job, until the job is done with them (:meth:`handed_back`)
    _taken: list[Standby] = field(default_factory=list)
    _lock: threading.Condition = field(default_factory=threading.Condition)
    _closing: threading.Lock = field(default_factory=threading.Lock)
    _closed: bool = False

    def take(self, lease: str, key: str, wait_s: float = MAKING_WAIT_S) -> Standby | None:
        """The lease's standby if it fits ``key`` (it is the caller's from here on). One still
        being started is waited for, up to ``wait_s``: it is ready sooner than a new container."""
        with self._lock:
            self._lock.wait_for(lambda: lease not in self._making, wait_s)
            ready = self._ready.get(lease)
            if ready is None or ready.key != key:
                return None
            self._taken.append(ready)
            return self._ready.pop(lease)

    def handed_back(self, taken: Standby) -> None:
        """The job that took ``taken`` is done with its container (removed, or left to the tidy)."""
        with self._lock:
            self._taken = [s for s in self._taken if s is not taken]

    def in_use(self) -> tuple[set[str], set[str]]:
        """What a clean-up of leftover containers must leave: the ids of the containers the pool
        holds (ready, or taken by a job that runs), and the leases whose standby is being started
        (its container may be there already, its id not known yet)."""
        with self._lock:
            held = [*self._ready.values(), *self._taken]
            return {s.container.id for s in held}, set(self._making)

    def refill(self, lease: str, key: str, make: Callable[[Path], Standby], discard: Callable[[Standby], None]) -> None:
        """Start a standby for ``lease`` in the background with ``make(folder)``, unless one that
        fits ``key`` is there or being made; one that fits another key is discarded."""
        with self._lock:
            if self._closed or lease in self._making:
                return
            old = self._ready.get(lease)
            if old is not None and old.key == key:
                return
            if old is not None:
                del self._ready[lease]
            self._making.add(lease)
        if old is not None:
            discard(old)
        threading.Thread(target=self._make, args=(lease, make, discard), daemon=True, name="standby").start()

    def _make(self, lease: str, make: Callable[[Path], Standby], discard: Callable[[Standby], None]) -> None:
        folder = self.root / secrets.token_hex(8)
        try:
            standby = make(folder)
        except Exception as exc:  # noqa: BLE001 - no standby: the next job starts its own container
            log.warning("no standby container for %s: %s", lease, exc)
            shutil.rmtree(folder, ignore_errors=True)
            self._made(lease, None)
            return
        with self._lock:
            if not self._closed:
                self._made(lease, standby)
                return
        discard(standby)
        self._made(lease, None)

    def _made(self, lease: str, standby: Standby | None) -> None:
        """``lease``'s standby is no longer being started (``standby``: it is ready); waiters wake."""
        with self._lock:
            self._making.discard(lease)
            if standby is not None:
                self._ready[lease] = standby
            self._lock.notify_all()

    def close(self, discard: Callable[[Standby], None], wait_s: float = 30.0) -> None:
        """No more standbys: those waiting are discarded, those still starting (waited for, up to
        ``wait_s``) discard themselves when they are up. A second caller returns when the first is
        done (a server's shutdown may call it from two threads; the process ends after the last)."""
        with self._closing:
            with self._lock:
                self._closed = True
                waiting, self._ready = list(self._ready.values()), {}
            for standby in waiting:
                discard(standby)
            with self._lock:
                self._lock.wait_for(lambda: not self._making, wait_s)

    def clear_folders(self) -> None:
        """Remove what earlier servers' standbys left (at start, before any is made)."""
        shutil.rmtree(self.root, ignore_errors=True)


def swap_in(folders: tuple[Path, ...], into: tuple[Path, ...]) -> None:
    """Move the entries of the job's folders into the standby's (by rename: one filesystem)."""
    for mine, theirs in zip(folders, into, strict=True):
        if not mine.is_dir():
            continue
        os.chmod(theirs, os.stat(mine).st_mode & 0o7777)
        for name in os.listdir(mine):
            os.rename(mine / name, theirs / name)


def undo_swap_in(folders: tuple[Path, ...], into: tuple[Path, ...]) -> None:
    """A hand-over that failed: the entries moved by :func:`swap_in` go back."""
    for mine, theirs in zip(folders, into, strict=True):
        if mine.is_dir() and theirs.is_dir():
            for name in os.listdir(theirs):
                os.rename(theirs / name, mine / name)


def swap_back(folders: tuple[Path, ...], into: tuple[Path, ...]) -> None:
    """After the container has exited: each standby folder becomes the job's folder again (what the
    job wrote there included); the job's emptied folder gives way to it."""
    for mine, theirs in zip(folders, into, strict=True):
        if mine.is_dir():
            os.rmdir(mine)  # emptied by swap_in (or never filled: an output folder)
        os.rename(theirs, mine)
