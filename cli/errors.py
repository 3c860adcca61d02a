"""The client's error classes. HTTP failures are turned into these in ONE place (cli.client._translated).

Each class stands for one way a call can fail; cli.output maps them to exit codes and cli.main prints
them as one line on stderr.
"""

from __future__ import annotations


class KcoralError(Exception):
    """Base of every error the client raises on purpose. ``str(err)`` is the message shown to the user."""

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    @property
    def exit_code(self) -> int:
        """What the CLI exits with for this error (2 bad input, 69 unreachable, 75 try later...)."""
        from kcoral.cli.output import exit_code_for_error  # noqa: PLC0415 - output imports this module

        return exit_code_for_error(self)


class UsageError(KcoralError):
    """Bad input caught on this side: a bad env name, a missing --remote, nothing to run..."""


class InputError(UsageError):
    """The directory to send cannot be packed (a symlink leading outside it, a FIFO, a device...)."""


class ServerUnreachable(KcoralError):
    """No answer from the server: connection refused, DNS failure, timeout, dropped connection."""


class Unauthorized(KcoralError):
    """401/403: the token is missing, wrong, or not allowed to do this."""


class BadRequest(KcoralError):
    """A 4xx other than 401/403/404, carrying the server's own message."""

    def __init__(self, message: str, *, status: int = 400, code: str = "", hint: str = "") -> None:
        super().__init__(message, hint=hint)
        self.status = status
        self.code = code


class NotFound(BadRequest):
    """404: no such job (or not yours), no such output file."""

    def __init__(self, message: str, *, code: str = "not_found", hint: str = "") -> None:
        super().__init__(message, status=404, code=code, hint=hint)


class ServerBusy(KcoralError):
    """429, 503, 507: the server cannot take this now (the token's queue is full, the engine is down,
    its disk is full); the same call may succeed later, after ``retry_after`` seconds if it said."""

    def __init__(self, message: str, *, status: int, retry_after: float | None = None, hint: str = "") -> None:
        super().__init__(message, hint=hint)
        self.status = status
        self.retry_after = retry_after


class ServerError(KcoralError):
    """A 5xx, or an answer the client cannot make sense of (bad JSON, a corrupt download)."""

    def __init__(self, message: str, *, status: int | None = None, hint: str = "") -> None:
        super().__init__(message, hint=hint)
        self.status = status


class StillRunning(KcoralError):
    """``wait`` gave up: the job has not finished within the time asked (it goes on on the server)."""
