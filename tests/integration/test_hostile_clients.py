"""Hostile clients against a real server over loopback (runner.connections, runner.bodylimit): connections
that never finish their request's head or body are closed, and can neither exhaust the server nor keep a
real client out; request bodies are bounded before any route reads them; a JSON body too deep or too
large in values is refused without stalling anyone else."""

from __future__ import annotations

import hashlib
import json
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx

from kcoral.runner.limits import ConnectionLimits
from tests.conftest import RunningServer, make_tar

HEAD = b"GET /v1/jobs HTTP/1.1\r\nHost: x\r\n"  # and never the blank line that ends the head


@contextmanager
def half_open(srv: RunningServer, count: int) -> Iterator[list[socket.socket]]:
    """``count`` connections that each send the start of a request's head and stop."""
    socks = []
    try:
        for _ in range(count):
            s = socket.create_connection((srv.settings.host, srv.settings.port), timeout=5)
            s.sendall(HEAD)
            socks.append(s)
        yield socks
    finally:
        for s in socks:
            s.close()


def closed_by_server(s: socket.socket, within: float) -> bool:
    """Whether the server closed ``s`` (EOF, or a reset), after any answer, within ``within`` seconds."""
    s.settimeout(within)
    try:
        while s.recv(1024):
            pass
        return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_a_head_that_never_ends_is_closed_and_a_slow_one_in_time_is_answered(
    server_factory: Callable[..., RunningServer],
) -> None:
    srv = server_factory(connections=ConnectionLimits(head_timeout_s=1.0))
    with half_open(srv, 3) as socks:
        began = time.monotonic()
        assert all(closed_by_server(s, 5) for s in socks)
        assert 0.8 < time.monotonic() - began < 4
    # a head sent slowly but within the time is a request like any other
    with socket.create_connection((srv.settings.host, srv.settings.port), timeout=5) as s:
        for piece in (b"GET /v1/health HTTP/1.1\r\n", b"Host: x\r\n", b"Connection: close\r\n\r\n"):
            s.sendall(piece)
            time.sleep(0.2)
        assert s.recv(64).startswith(b"HTTP/1.1 200")


def test_connections_held_without_a_request_never_keep_a_real_client_out(
    server_factory: Callable[..., RunningServer],
) -> None:
    srv = server_factory(connections=ConnectionLimits(total=40, per_client=16, head_timeout_s=60))
    with half_open(srv, 100) as socks:
        # one client address (loopback) past its cap: the oldest waiting connections were closed to admit
        # the newest, so the server holds at most its cap of them, not 100
        time.sleep(0.3)
        alive = [s for s in socks if not closed_by_server(s, 0.01)]
        assert len(alive) <= 16, len(alive)
        for _ in range(5):  # and a real client from the same address is answered, each time
            with httpx.Client(base_url=srv.url, timeout=5) as fresh:
                assert fresh.get("/v1/health").status_code == 200


def slow_body(srv: RunningServer, head: bytes, first: bytes) -> socket.socket:
    """A connection that sends a whole request head (``head``, its Content-Length more than ``first``)
    and the start of its body, ``first``."""
    s = socket.create_connection((srv.settings.host, srv.settings.port), timeout=5)
    s.sendall(head + first)
    return s


def answer_then_close(s: socket.socket, within: float) -> bytes:
    """What the server sends on ``s`` until it closes it (AssertionError if it is still open)."""
    s.settimeout(within)
    got = b""
    try:
        while piece := s.recv(4096):
            got += piece
    except ConnectionResetError:
        pass
    except TimeoutError:
        raise AssertionError(f"still open after {within} s; got {got!r}") from None
    return got


SPEC_HEAD = b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n"


def test_a_body_that_stops_is_answered_408_and_an_upload_that_keeps_its_rate_is_taken(
    server_factory: Callable[..., RunningServer],
) -> None:
    srv = server_factory(connections=ConnectionLimits(body_timeout_s=1.0, body_min_rate=2000))
    with slow_body(srv, SPEC_HEAD, b'{"argv": ["m.py"], ') as s:  # 19 of 40 bytes, then nothing
        answer = answer_then_close(s, 10)
    assert answer.startswith(b"HTTP/1.1 408"), answer
    said = json.loads(answer.split(b"\r\n\r\n", 1)[1])
    assert said["error"] == "request_timeout" and "within 1 s" in said["message"], said
    assert srv.http.get("/v1/jobs").json() == []  # nothing was created

    def upload_head(job_id: str, size: int) -> bytes:
        return f"PUT /v1/jobs/{job_id}/input HTTP/1.1\r\nHost: x\r\nContent-Length: {size}\r\n\r\n".encode()

    # an upload sent over longer than the body timeout, but faster than the minimum rate, is taken
    tar = make_tar({"m.py": "print('slow and steady')"})
    steady = srv.http.post("/v1/jobs", json={"argv": ["m.py"]}).json()["id"]
    with slow_body(srv, upload_head(steady, len(tar)), tar[:1000]) as s:
        for at in range(1000, len(tar), 1000):  # 1000 bytes each 0.2 s: 2.5 times the minimum rate
            time.sleep(0.2)
            s.sendall(tar[at : at + 1000])
        answer = s.recv(4096)
    assert len(tar) > 8000 and answer.startswith(b"HTTP/1.1 200"), answer
    assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["input_sha256"] == hashlib.sha256(tar).hexdigest()
    # one that stops is answered 408 once its grace and what it sent are spent; its job goes
    stopped = srv.http.post("/v1/jobs", json={"argv": ["m.py"]}).json()["id"]
    with slow_body(srv, upload_head(stopped, len(tar)), tar[:3000]) as s:
        began = time.monotonic()
        answer = answer_then_close(s, 15)
    assert answer.startswith(b"HTTP/1.1 408") and b"must keep up 2000 bytes/s" in answer, answer
    assert time.monotonic() - began > 1.5  # 1 s of grace and 1.5 s for its 3000 bytes
    deadline = time.monotonic() + 10
    while srv.http.get(f"/v1/jobs/{stopped}").status_code != 404:
        assert time.monotonic() < deadline, "the job of an upload cut by the server stayed"
        time.sleep(0.05)


def test_slow_bodies_past_a_clients_cap_never_keep_its_health_check_out(
    server_factory: Callable[..., RunningServer],
) -> None:
    srv = server_factory(connections=ConnectionLimits(total=40, per_client=16, body_timeout_s=60, grace_s=0.5))
    socks = [slow_body(srv, SPEC_HEAD, b"{") for _ in range(30)]  # past the cap of 16, each body stalled
    try:
        for pause in (0, 0, 1.0, 0, 0):  # a real client from the same address is answered, each time: while
            time.sleep(pause)  # the bodies are in their grace (the youngest goes) and after (the oldest)
            with httpx.Client(base_url=srv.url, timeout=5) as fresh:
                r = fresh.get("/v1/health")
                assert r.status_code == 200, r.text
        alive = [s for s in socks if not closed_by_server(s, 0.01)]
        assert len(alive) <= 16, len(alive)
    finally:
        for s in socks:
            s.close()


def test_a_body_over_the_limit_is_refused_before_it_is_read(server: RunningServer) -> None:
    with socket.create_connection((server.settings.host, server.settings.port), timeout=5) as s:
        s.sendall(
            b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 400000000\r\n\r\n{"
        )
        answer = s.recv(4096)
    assert answer.startswith(b"HTTP/1.1 413"), answer
    assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"] == "too_large"

    def chunks() -> Iterator[bytes]:  # no length said: refused once it passes the limit
        yield b'{"argv": ["' + b"a" * (1 << 20) + b'"]}'

    r = server.http.post("/v1/jobs", content=chunks(), headers={"Content-Type": "application/json"})
    assert r.status_code == 413 and r.json()["error"] == "too_large", r.text


def test_json_too_deep_or_too_many_values_is_refused_and_stalls_no_one(server: RunningServer) -> None:
    deep = b"[" * 5000 + b"]" * 5000
    r = server.http.post("/v1/jobs", content=deep, headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and "nests deeper than 32 levels" in r.json()["message"], r.text
    many = json.dumps({"kind": "python", "argv": ["x.py"], "env": {f"K{i}": "" for i in range(60_000)}})
    assert len(many) < 1 << 20
    began = time.monotonic()
    r = server.http.post("/v1/jobs", content=many, headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and "more than 50000 values" in r.json()["message"], r.text
    assert time.monotonic() - began < 5
    assert server.http.get("/v1/jobs").json() == []  # nothing was created
