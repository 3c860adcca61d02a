"""kcoral's one exception tree, for both sides: each class carries the HTTP status the server answers
with, the code of its error body, and the exit code the command line ends with. The server raises
them (foreign errors, Docker's, SQLite's, NVML's, tar's, are translated at one boundary each, and
routes never see foreign errors); the client raises them for what it finds itself and rebuilds the
server's from an error answer (:func:`from_answer`). ``str(err)`` is the message shown to a person.

    KcoralError                  500 internal       exit 70  (a server bug, or an answer the client cannot read)
    +-- RequestError             400 bad_request    exit 2   the request was wrong: a message a person can act on
    |   +-- BadRequest           400                         malformed spec, forbidden env name, bad tar
    |   +-- UsageError           400                         found on the client's side: a bad option, nothing to run
    |   |   +-- InputError       400                         the folder to send cannot be packed
    |   +-- Unauthorized         401 unauthorized   exit 77  missing, unknown or not allowed token
    |   +-- NotFound             404 not_found               no such job or output file
    |   +-- Conflict             409 conflict                wrong state (input already uploaded, ...)
    |   +-- PayloadTooLarge      413 too_large               upload over the byte or file-count budget
    +-- ServerBusy               503 busy           exit 75  not now: the same call may succeed later (retry_after)
    |   +-- TooManyJobs          429 too_many_jobs           the token's queued-job cap is reached
    |   +-- InfrastructureError  503 infrastructure          the sandbox failed (Docker down, image missing, ...):
    |   |   |                                                a job that meets it ends infrastructure_error
    |   |   +-- ShuttingDown     503 shutting_down           the server is stopping: it takes no new work
    |   +-- InsufficientStorage  507 insufficient_storage    the server's disk is full: nothing new is taken
    +-- ServerUnreachable                           exit 69  no answer: refused, DNS, timed out, dropped
    +-- ServerError              500                exit 70  the client's view of a 5xx or an answer it cannot read
    +-- StillRunning                                exit 75  ``wait`` gave up: the job goes on on the server
"""

from __future__ import annotations

import json

from kcoral.protocol.printable import printable

#: the command line's exit codes (a job's own exit code passes through; these are kcoral's)
EXIT_OK = 0
EXIT_USAGE = 2
EXIT_INCONCLUSIVE = 3
EXIT_UNREACHABLE = 69
EXIT_SERVER_ERROR = 70
EXIT_TRY_LATER = 75
EXIT_UNAUTHORIZED = 77
EXIT_INTERRUPTED = 130


class KcoralError(Exception):
    """Base of every error kcoral raises on purpose. ``status``, ``code`` and ``retry_after`` are the
    class's unless this error was given its own (the client's copy of a server's answer)."""

    status = 500
    code = "internal"
    exit_code = EXIT_SERVER_ERROR
    #: seconds after which the same request may succeed (sent as Retry-After), None: not a matter of time
    retry_after: float | None = None

    def __init__(
        self,
        message: str,
        *,
        hint: str = "",
        status: int | None = None,
        code: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        if status is not None:
            self.status = status
        if code:
            self.code = code
        if retry_after is not None:
            self.retry_after = retry_after


class RequestError(KcoralError):
    status = 400
    code = "bad_request"
    exit_code = EXIT_USAGE


class BadRequest(RequestError):
    pass


class UsageError(RequestError):
    """Bad input caught on the client's side: a bad env name, a missing --remote, nothing to run..."""


class InputError(UsageError):
    """The directory to send cannot be packed (a symlink leading outside it, a FIFO, a device...)."""


class Unauthorized(RequestError):
    status = 401
    code = "unauthorized"
    exit_code = EXIT_UNAUTHORIZED


class NotFound(RequestError):
    status = 404
    code = "not_found"


class Conflict(RequestError):
    status = 409
    code = "conflict"


class PayloadTooLarge(RequestError):
    status = 413
    code = "too_large"


class ServerBusy(KcoralError):
    """The server cannot take this now; the same call may succeed later, after ``retry_after`` s."""

    status = 503
    code = "busy"
    exit_code = EXIT_TRY_LATER


class TooManyJobs(ServerBusy):
    status = 429
    code = "too_many_jobs"
    retry_after = 10


class InfrastructureError(ServerBusy):
    status = 503
    code = "infrastructure"
    retry_after = 30


class ShuttingDown(InfrastructureError):
    code = "shutting_down"
    retry_after = 30


class InsufficientStorage(ServerBusy):
    status = 507
    code = "insufficient_storage"
    retry_after = 60


class ServerUnreachable(KcoralError):
    """No answer from the server: connection refused, DNS failure, timeout, dropped connection."""

    exit_code = EXIT_UNREACHABLE


class ServerError(KcoralError):
    """A 5xx, or an answer the client cannot make sense of (bad JSON, a corrupt download)."""


class StillRunning(KcoralError):
    """``wait`` gave up: the job has not finished within the time asked (it goes on on the server)."""

    exit_code = EXIT_TRY_LATER


def _by_status(status: int) -> type[KcoralError]:
    if status in (401, 403):
        return Unauthorized
    if status == 404:
        return NotFound
    if status in (429, 503, 507):
        return ServerBusy
    if 400 <= status < 500:
        return BadRequest
    return ServerError


def _answerable() -> dict[str, type[KcoralError]]:
    """Every class a server answers with, by the code of its error body (the tree's leaves and nodes)."""
    found: dict[str, type[KcoralError]] = {}
    todo: list[type[KcoralError]] = [RequestError, ServerBusy]
    while todo:
        cls = todo.pop()
        found.setdefault(cls.code, cls)
        todo.extend(cls.__subclasses__())
    return found


def from_answer(status: int, code: str, message: str, *, retry_after: float | None = None) -> KcoralError:
    """The error an error answer of a server stands for: its body's code's class when that class answers
    with this status, else the status's (401/403 Unauthorized, 404 NotFound, 429/503/507 ServerBusy, another 4xx
    BadRequest, anything else ServerError); the status, code and Retry-After as received."""
    cls = _answerable().get(code)
    if cls is None or cls.status != status:
        cls = _by_status(status)
    hint = "pass --token or set KCORAL_TOKEN" if issubclass(cls, Unauthorized) else ""
    err = cls(message, hint=hint, status=status, code=code or None)
    err.retry_after = retry_after  # what the server said, not the class's default
    return err


def error_body(code: str, message: str) -> bytes:
    """THE error body of a server's answer, ``{"error": code, "message": text}`` (models.ErrorBody): the
    text may quote what a client or a job chose, so it is made printable (valid JSON, safe on a terminal)."""
    return json.dumps({"error": code, "message": printable(message)}).encode()
