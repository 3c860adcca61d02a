"""The server's helpers around kcoral's errors (kcoral.protocol.errors holds the tree): the one
translation of a failed write of its own files (:func:`disk_writes`) and the words of a full disk."""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager

from kcoral.protocol.errors import InfrastructureError, InsufficientStorage

#: what a write meets when the disk (or the data dir's quota) is full
DISK_FULL = (errno.ENOSPC, errno.EDQUOT)
#: how every message about a full disk begins (a job ended by one: its reason)
DISK_FULL_REASON = "the server's disk is full"
#: the reason of a job whose log stopped fitting while it ran
LOG_DISK_FULL = f"{DISK_FULL_REASON}: the job's log could not be kept, so the job was stopped"


@contextmanager
def disk_writes(what: str) -> Iterator[None]:
    """The one translation of an OSError met while the server writes its own files: a full disk is
    InsufficientStorage (507), anything else an InfrastructureError naming ``what``."""
    try:
        yield
    except OSError as exc:
        if exc.errno in DISK_FULL:
            raise InsufficientStorage(f"{DISK_FULL_REASON}: {what}") from None
        raise InfrastructureError(f"{what}: {exc.strerror or exc}") from None
