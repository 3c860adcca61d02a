"""cli.client against an in-memory transport: requests sent, answers parsed, errors translated."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import httpx
import pytest

from kcoral.cli.client import KcoralClient, normalise_base_url
from kcoral.protocol.errors import (
    BadRequest,
    NotFound,
    PayloadTooLarge,
    ServerBusy,
    ServerError,
    ServerUnreachable,
    Unauthorized,
    UsageError,
)
from kcoral.protocol.framing import STDERR, STDOUT, Piece, frame
from kcoral.protocol.models import PythonSpec


def job(state: str = "created", **extra: object) -> dict[str, object]:
    return {
        "id": "j1", "owner": "me", "state": state, "spec": {"argv": ["s.py"]}, "times": {"created": 1.0},
        **extra,
    }  # fmt: skip


def client_for(handler) -> KcoralClient:  # type: ignore[no-untyped-def]
    return KcoralClient("http://server:8901/", token="tok", transport=httpx.MockTransport(handler))


def test_base_url() -> None:
    assert normalise_base_url("http://h:1/") == "http://h:1"
    assert normalise_base_url("https://h/v1") == "https://h"
    with pytest.raises(UsageError):
        normalise_base_url("h:1")


def test_submit_creates_then_streams_the_tar(tmp_path: Path) -> None:
    tar = tmp_path / "in.tar"
    tar.write_bytes(b"x" * 600_000)
    seen: list[tuple[str, str, bytes, httpx.Headers]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = request.read()
        seen.append((request.method, request.url.path, body, request.headers))
        if request.method == "POST":
            return httpx.Response(201, json=job())
        return httpx.Response(200, json=job("queued", queue_position=2))

    progress: list[int] = []
    spec = PythonSpec(argv=["s.py"], env={"A": "1"})
    view = client_for(handler).submit(spec, tar, lambda sent, _total: progress.append(sent))
    assert view.state == "queued" and view.queue_position == 2
    (m1, p1, b1, h1), (m2, p2, b2, h2) = seen
    assert (m1, p1) == ("POST", "/v1/jobs") and json.loads(b1)["env"] == {"A": "1"}
    assert h1["authorization"] == "Bearer tok"
    assert (m2, p2) == ("PUT", "/v1/jobs/j1/input") and b2 == tar.read_bytes()
    assert h2["content-type"] == "application/x-tar" and h2["content-length"] == "600000"
    assert progress[-1] == 600_000 and progress == sorted(progress)


def test_failed_upload_cancels_the_job(tmp_path: Path) -> None:
    tar = tmp_path / "in.tar"
    tar.write_bytes(b"x")
    calls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(f"{request.method} {request.url.path}")
        if request.method == "PUT":
            return httpx.Response(413, json={"error": "too_large", "message": "the upload is too big"})
        return httpx.Response(201 if request.url.path == "/v1/jobs" else 200, json=job())

    with pytest.raises(PayloadTooLarge, match="the upload is too big") as info:  # the server's class, rebuilt
        client_for(handler).submit(PythonSpec(argv=["s.py"]), tar)
    assert info.value.status == 413 and info.value.code == "too_large"
    assert calls[-1] == "POST /v1/jobs/j1/cancel"


@pytest.mark.parametrize(
    ("status", "error"),
    [(401, Unauthorized), (403, Unauthorized), (404, NotFound), (409, BadRequest), (500, ServerError),
     (429, ServerBusy), (503, ServerBusy), (507, ServerBusy), (502, ServerError)],
)  # fmt: skip
def test_status_errors_are_translated(status: int, error: type[Exception]) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, json={"error": "x", "message": "server says no"})

    with pytest.raises(error, match="server says no"):
        client_for(handler).status("j1")


@pytest.mark.parametrize(
    ("header", "seconds"),
    [("10", 10.0), ("0.5", 0.5), ("0", 0.0), ("Wed, 21 Oct 2026 07:28:00 GMT", None), ("inf", None), ("nan", None),
     ("-5", None), ("1e999", None)],
)  # fmt: skip
def test_a_busy_server_says_when_to_try_again(header: str, seconds: float | None) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(429, json={"error": "too_many_jobs", "message": "wait"}, headers={"Retry-After": header})

    with pytest.raises(ServerBusy) as info:
        client_for(handler).status("j1")
    assert (info.value.status, info.value.retry_after) == (429, seconds)


def test_non_json_error_body() -> None:
    with pytest.raises(ServerError, match="Bad Gateway"):
        client_for(lambda r: httpx.Response(502, text="")).jobs()


def test_unreachable() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    with pytest.raises(ServerUnreachable, match="connection refused"):
        client_for(handler).health()


def test_garbage_answer_is_a_server_error() -> None:
    with pytest.raises(ServerError, match="unexpected answer"):
        client_for(lambda r: httpx.Response(200, json={"id": 1})).status("j1")
    with pytest.raises(ServerError, match="not JSON"):
        client_for(lambda r: httpx.Response(200, text="<html>")).status("j1")


def test_job_id_is_quoted() -> None:
    paths: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        paths.append(request.url.raw_path.decode())
        return httpx.Response(200, json=job())

    client_for(handler).status("../x")
    assert paths == ["/v1/jobs/..%2Fx"]


def test_follow_log_streams_from_offset_with_each_pieces_stream() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.params["offset"] == "5" and request.url.params["follow"] == "true"
        assert request.url.params["frames"] == "true"
        body = frame(Piece(STDOUT, b"hello ")) + frame(Piece(STDERR, b"world"))
        return httpx.Response(200, content=body)

    assert list(client_for(handler).follow_log("j1", 5)) == [Piece(STDOUT, b"hello "), Piece(STDERR, b"world")]


def test_a_log_that_is_not_framed_is_a_server_error() -> None:
    with pytest.raises(ServerError, match="not a log frame"):
        list(client_for(lambda r: httpx.Response(200, content=b"hello world")).follow_log("j1"))


def test_follow_log_error_is_translated() -> None:
    with pytest.raises(NotFound):
        list(client_for(lambda r: httpx.Response(404, json={"message": "no job"})).follow_log("j1"))


def test_outputs_and_download(tmp_path: Path) -> None:
    data = b"result"
    digest = hashlib.sha256(data).hexdigest()

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/jobs/j1/outputs":
            return httpx.Response(200, json=[{"path": "d/r.txt", "size": 6, "sha256": digest}])
        assert request.url.path == "/v1/jobs/j1/outputs/d/r.txt"
        return httpx.Response(200, content=data)

    client = client_for(handler)
    [out] = client.outputs("j1")
    target = client.download("j1", out.path, tmp_path / "o", out.sha256)
    assert target == (tmp_path / "o" / "d" / "r.txt").resolve() and target.read_bytes() == data


def test_download_with_bad_sha256_leaves_nothing(tmp_path: Path) -> None:
    client = client_for(lambda r: httpx.Response(200, content=b"tampered"))
    with pytest.raises(ServerError, match="sha256 mismatch"):
        client.download("j1", "r.txt", tmp_path, "0" * 64)
    assert list(tmp_path.iterdir()) == []


def test_download_refuses_escaping_paths(tmp_path: Path) -> None:
    client = client_for(lambda r: httpx.Response(200, content=b"x"))
    for bad in ["../evil", "/etc/passwd"]:
        with pytest.raises(ServerError, match="refusing"):
            client.download("j1", bad, tmp_path / "o")
    assert not (tmp_path / "evil").exists()
