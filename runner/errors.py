"""The server's exception tree. Foreign errors (Docker, SQLite, NVML, tar) are translated into
these at one boundary each (executor, store, gpus, archive); routes never see foreign errors.

    KcoralError                       (500 unless a subclass says otherwise)
    +-- RequestError                  the client's fault: 4xx with a message a person can act on
    |   +-- BadRequest                400  malformed spec, forbidden env name, bad tar
    |   +-- Unauthorized              401  missing or unknown bearer token
    |   +-- NotFound                  404  no such job or output file
    |   +-- Conflict                  409  wrong state (input already uploaded, ...)
    |   +-- PayloadTooLarge           413  upload over the byte or file-count budget
    |   +-- TooManyJobs               429  the token's queued-job cap is reached
    +-- InfrastructureError           503  the sandbox failed (Docker down, image missing, ...):
    |   |                                  a job that meets it ends with Verdict.infrastructure_error
    |   +-- ShuttingDown              503  the server is stopping: it takes no new work
    +-- InsufficientStorage           507  the server's disk is full: nothing new is taken
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager


class KcoralError(Exception):
    status = 500
    code = "internal"
    #: seconds after which the same request may succeed (sent as Retry-After), None: not a matter of time
    retry_after: int | None = None

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class RequestError(KcoralError):
    status = 400
    code = "bad_request"


class BadRequest(RequestError):
    pass


class Unauthorized(RequestError):
    status = 401
    code = "unauthorized"


class NotFound(RequestError):
    status = 404
    code = "not_found"


class Conflict(RequestError):
    status = 409
    code = "conflict"


class PayloadTooLarge(RequestError):
    status = 413
    code = "too_large"


class TooManyJobs(RequestError):
    status = 429
    code = "too_many_jobs"
    retry_after = 10


class InfrastructureError(KcoralError):
    status = 503
    code = "infrastructure"
    retry_after = 30


class ShuttingDown(InfrastructureError):
    code = "shutting_down"
    retry_after = 30


class InsufficientStorage(KcoralError):
    status = 507
    code = "insufficient_storage"
    retry_after = 60


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
