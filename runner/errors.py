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
    +-- InfrastructureError           the sandbox failed (Docker down, image missing, ...):
                                      a job that meets it ends with Verdict.infrastructure_error
"""

from __future__ import annotations


class KcoralError(Exception):
    status = 500
    code = "internal"

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


class InfrastructureError(KcoralError):
    status = 503
    code = "infrastructure"
