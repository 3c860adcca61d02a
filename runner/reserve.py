"""Room kept back on the data dir's disk so that the store can always record how a job ended.

A job that fills the disk (or a disk filled by anything else while jobs run) must still get its
verdict recorded, or it stays ``running`` until someone frees space and ends with the crash reason
after a restart. The store holds a file of RESERVE_BYTES in the data dir while there is room for it;
when a verdict cannot be written for a full disk it lets the file go and writes again
(:meth:`DiskReserve.release`), and takes the room back once the disk has twice that free again
(:meth:`DiskReserve.refill`). Nothing else may use it: uploads and job files meet the full disk.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import threading
import time
from pathlib import Path

log = logging.getLogger("kcoral.reserve")

#: what the store keeps back: a verdict is a few pages of SQLite's write-ahead log, so this records
#: hundreds of them
RESERVE_BYTES = 2 << 20
#: seconds between two looks at the disk while the reserve is missing
REFILL_EVERY_S = 1.0


class DiskReserve:
    """A file of ``size`` bytes at ``path`` that holds room on its disk for the one who may use it."""

    def __init__(self, path: Path, size: int = RESERVE_BYTES) -> None:
        self.path = path
        self.size = size
        self._lock = threading.Lock()
        self._next_look = 0.0

    @property
    def held(self) -> bool:
        try:
            return self.path.stat().st_size >= self.size
        except OSError:
            return False

    def refill(self) -> bool:
        """Hold the room again where the disk has twice it free (looked at most every REFILL_EVERY_S
        while it is missing); whether it is held. Never raises."""
        with self._lock:
            if self.held:
                return True
            now = time.monotonic()
            if now < self._next_look:
                return False
            self._next_look = now + REFILL_EVERY_S
            try:
                disk = os.statvfs(self.path.parent)
                if disk.f_bavail * disk.f_frsize < 2 * self.size:
                    return False
                self._make()
            except OSError as exc:
                log.warning("the disk's reserve for verdicts could not be made again: %s", exc)
                with contextlib.suppress(OSError):
                    self.path.unlink()
                return False
            log.info("the disk's reserve for verdicts is held again (%d bytes)", self.size)
            return True

    def release(self) -> bool:
        """Let the room go (a verdict must be written on a full disk); whether there was any."""
        with self._lock:
            held = self.held
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            self._next_look = time.monotonic() + REFILL_EVERY_S
        if held:
            log.warning("the disk is full: the reserve kept for verdicts is used")
        return held

    def _make(self) -> None:
        """The file, its blocks allocated (written where the filesystem cannot allocate without writing)."""
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            try:
                os.posix_fallocate(fd, 0, self.size)
            except OSError as exc:
                if exc.errno not in (errno.EOPNOTSUPP, errno.ENOTSUP, errno.EINVAL):
                    raise
                block = b"\0" * (64 << 10)
                for offset in range(0, self.size, len(block)):
                    os.pwrite(fd, block[: self.size - offset], offset)
        finally:
            os.close(fd)
