"""kcoral's one exception tree (kcoral.protocol.errors): each class's HTTP status, body code and exit
code; the client rebuilds a server's error from its answer. Pure logic."""

from __future__ import annotations

import pytest

from kcoral.protocol import errors
from kcoral.protocol.errors import (
    BadRequest,
    Conflict,
    InfrastructureError,
    InsufficientStorage,
    KcoralError,
    NotFound,
    PayloadTooLarge,
    RequestError,
    ServerBusy,
    ServerError,
    ServerUnreachable,
    ShuttingDown,
    StillRunning,
    TooManyJobs,
    Unauthorized,
    UsageError,
    from_answer,
)


def test_there_is_one_error_root() -> None:
    """Every exception class kcoral's client and server raise on purpose descends from one KcoralError."""
    from kcoral.runner import errors as server_helpers
    from kcoral.runner.cluster.hostagent import HostRefused

    assert not hasattr(server_helpers, "KcoralError")
    classes = [c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, Exception)]
    assert len(classes) == 17 and all(issubclass(c, KcoralError) for c in classes)
    assert issubclass(HostRefused, KcoralError)


@pytest.mark.parametrize(
    ("cls", "status", "code", "exit_code"),
    [
        (KcoralError, 500, "internal", 70),
        (BadRequest, 400, "bad_request", 2),
        (UsageError, 400, "bad_request", 2),
        (Unauthorized, 401, "unauthorized", 77),
        (NotFound, 404, "not_found", 2),
        (Conflict, 409, "conflict", 2),
        (PayloadTooLarge, 413, "too_large", 2),
        (TooManyJobs, 429, "too_many_jobs", 75),
        (InfrastructureError, 503, "infrastructure", 75),
        (ShuttingDown, 503, "shutting_down", 75),
        (InsufficientStorage, 507, "insufficient_storage", 75),
        (ServerUnreachable, 500, "internal", 69),
        (ServerError, 500, "internal", 70),
        (StillRunning, 500, "internal", 75),
    ],
)
def test_each_class_carries_its_status_code_and_exit_code(
    cls: type[KcoralError], status: int, code: str, exit_code: int
) -> None:
    err = cls("m")
    assert (err.status, err.code, err.exit_code, err.message, str(err)) == (status, code, exit_code, "m", "m")


def test_a_servers_answer_becomes_the_class_it_raised() -> None:
    for cls in (
        NotFound,
        Conflict,
        PayloadTooLarge,
        TooManyJobs,
        InfrastructureError,
        ShuttingDown,
        InsufficientStorage,
    ):
        err = from_answer(cls.status, cls.code, "said", retry_after=3.0)
        assert type(err) is cls and (err.status, err.code, err.retry_after, err.message) == (
            cls.status,
            cls.code,
            3.0,
            "said",
        )


@pytest.mark.parametrize(
    ("status", "code", "cls"),
    [
        (404, "", NotFound),
        (409, "", BadRequest),
        (403, "forbidden", Unauthorized),
        (401, "unauthorized", Unauthorized),
        (429, "", ServerBusy),
        (503, "too_many_jobs", ServerBusy),  # a code whose class answers with another status: by status
        (507, "not-a-code", ServerBusy),
        (418, "teapot", BadRequest),
        (500, "internal", ServerError),
        (502, "", ServerError),
        (400, "x" * 1000, BadRequest),
    ],
)
def test_an_answer_without_a_known_code_goes_by_its_status(status: int, code: str, cls: type[KcoralError]) -> None:
    err = from_answer(status, code, "m")
    assert type(err) is cls and err.status == status and err.retry_after is None
    assert err.code == (code or cls.code)


def test_an_unauthorized_answer_hints_at_the_token() -> None:
    assert "KCORAL_TOKEN" in from_answer(401, "", "m").hint


def test_a_rebuilt_error_keeps_no_retry_the_server_did_not_send() -> None:
    assert TooManyJobs("m").retry_after == 10
    assert from_answer(429, "too_many_jobs", "m").retry_after is None


def test_the_client_and_server_trees_meet_where_a_person_acts() -> None:
    assert issubclass(UsageError, RequestError) and issubclass(TooManyJobs, ServerBusy)
    assert issubclass(ShuttingDown, InfrastructureError) and not issubclass(InfrastructureError, RequestError)
