"""What a client's connections may hold: bounded in number, overall and per client address, and in time
until their request's head (its line and headers) and then its body have arrived.

A connection costs the server a file descriptor from the moment it is accepted, and uvicorn times out
only idle keep-alive connections: one that sends ``GET /v1/jobs HTTP/1.1`` and stops is held for good,
and ~20,000 of them (no token needed) took every descriptor and with them health checks and
submissions; so was one that sends a whole head with a Content-Length and then never the body. So
uvicorn's HTTP/1.1 protocol is wrapped (:func:`guarded_protocol`, given to uvicorn as its ``http``
class) with these rules (the values: runner.limits.ConnectionLimits):

- a request's head must arrive within ``head_timeout_s`` of the connection's start, or of the end of
  its previous response (a keep-alive connection waiting for its next request); past it the
  connection is closed with no answer (it never asked anything);
- a request's body must arrive within ``body_timeout_s`` of its head; a job's upload (the one body
  that may be large) gets that long as a grace period and must then keep up ``body_min_rate`` on
  average (:class:`BodyClock`). Past it the request is answered 408 ``request_timeout`` (when nothing
  was answered yet) and the connection closed. The time the server itself was not reading (its
  buffer full while a route writes to disk, a ``100-continue`` not yet sent) is not the client's;
- at most ``per_client`` connections from one client address and ``total`` in all. A new connection
  over either cap evicts one (of that address, for the per-client cap) that takes nothing from a client
  that asks, in this order (:meth:`GuardedH11Protocol.eviction_tier`): the oldest that stopped in its
  request's head or has asked nothing for ``grace_s``; the oldest whose body comes slower than
  ``body_min_rate`` (its first ``grace_s`` not counted); the youngest whose body is still in that
  grace (an attacker that opens connections faster than their grace churns its own newest); last, the
  oldest that is new and has sent nothing yet (a real client's, about to ask). A client that sends its
  requests is never displaced by one that holds connections open without asking, or asks and never
  finishes, so health checks and real clients keep being answered while an attacker holds the cap. A
  body that keeps the rate, and a request the route has whole, are never evicted; when only those are
  left, the new connection is answered 503 ``too_many_connections`` with ``Retry-After`` and closed;
- the counts are the server's own (one event loop: no lock), released when a connection is lost.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from kcoral.protocol.errors import error_body
from kcoral.runner.bodylimit import STREAMED
from kcoral.runner.limits import ConnectionLimits


class ConnectionGuard:
    """The open connections of one server, oldest first, and who may be evicted to admit a new one."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self.open: OrderedDict[GuardedH11Protocol, str] = OrderedDict()
        self.by_client: dict[str, int] = {}
        #: connections closed to admit others, for a head that never came or a body too slow, and refused
        #: (the bench's figures)
        self.evicted = 0
        self.timed_out = 0
        self.slow_bodies = 0
        self.refused = 0

    def admit(self, conn: GuardedH11Protocol, client: str) -> bool:
        """Register ``conn`` from ``client``, evicting what the caps ask; False: refuse it (nothing to evict)."""
        if self.by_client.get(client, 0) >= self.limits.per_client and not self._evict(client):
            return False
        if len(self.open) >= self.limits.total and not self._evict(None):
            return False
        self.open[conn] = client
        self.by_client[client] = self.by_client.get(client, 0) + 1
        return True

    def release(self, conn: GuardedH11Protocol) -> None:
        client = self.open.pop(conn, None)
        if client is None:
            return
        left = self.by_client[client] - 1
        if left:
            self.by_client[client] = left
        else:
            del self.by_client[client]

    def _evict(self, client: str | None) -> bool:
        """Close the connection (of ``client``, or of anyone) that is first to go (module docstring); False:
        none may go."""
        victim, first = None, (FRESH + 1, 0)
        for index, (conn, whose) in enumerate(self.open.items()):
            tier = conn.eviction_tier() if client is None or whose == client else None
            if tier is None:
                continue
            rank = (tier, -index if tier == YOUNG_BODY else index)
            if rank < first:
                victim, first = conn, rank
            if tier == STUCK:
                break
        if victim is None:
            return False
        self.release(victim)
        self.evicted += 1
        victim.transport.close()
        return True


#: where a connection is in its request: waiting for a head, receiving a body, or busy (the route has it)
HEAD, BODY, BUSY = "head", "body", "busy"
#: who goes first to admit a new connection at a cap (GuardedH11Protocol.eviction_tier)
STUCK, SLOW_BODY, YOUNG_BODY, FRESH = 0, 1, 2, 3


class BodyClock:
    """How one request's body is arriving (pure: the caller gives the times): the bytes sent since its
    head and the client's time, which leaves out what the server spent behind (not reading)."""

    def __init__(self, began: float, upload: bool) -> None:
        self.began, self.upload = began, upload
        self.received = 0
        #: seconds the server was behind, up to the last sample
        self.stalled = 0.0
        self._sampled, self._behind = began, False

    def sample(self, now: float, behind: bool, received: int = 0) -> None:
        """``received`` more bytes came at ``now``; ``behind``: the server is not reading from now on."""
        if self._behind:
            self.stalled += now - self._sampled
        self._sampled, self._behind = now, behind
        self.received += received

    def client_s(self, now: float) -> float:
        """Seconds the body has had to arrive, the server's own delays left out."""
        return now - self.began - self.stalled - (now - self._sampled if self._behind else 0.0)

    def left_s(self, now: float, limits: ConnectionLimits) -> float:
        """Seconds of the client's time left before the body is too late (<= 0: it is)."""
        allowed = limits.body_timeout_s + (self.received / limits.body_min_rate if self.upload else 0.0)
        return allowed - self.client_s(now)

    def lagging(self, now: float, limits: ConnectionLimits) -> bool:
        """Slower than ``body_min_rate`` on average, its first ``grace_s`` not counted."""
        spent = self.client_s(now) - limits.grace_s
        return spent > 0 and self.received < limits.body_min_rate * spent

    def why(self, now: float, limits: ConnectionLimits) -> str:
        sent = f"{self.received} bytes of the request's body came in {self.client_s(now):.1f} s"
        if self.upload:
            rate = limits.body_min_rate
            return f"{sent}: after its first {limits.body_timeout_s:g} s an upload must keep up {rate} bytes/s"
        return f"{sent}: a body must arrive within {limits.body_timeout_s:g} s of its request's head"


def _answer(status: str, code: str, message: str, retry_after: bool = False) -> bytes:
    """A whole HTTP/1.1 answer in THE error body's shape, the connection closed after it (written to the
    transport as it is: it may come before, or in the middle of, the request it answers)."""
    body = error_body(code, message)
    later = "retry-after: 1\r\n" if retry_after else ""
    head = f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\n{later}connection: close\r\n"
    return f"{head}content-length: {len(body)}\r\n\r\n".encode() + body


#: the answer to a connection refused at the cap (it may not have sent anything yet)
_REFUSAL = _answer(
    "503 Service Unavailable",
    "too_many_connections",
    "the server holds as many connections as it takes, each busy with a request: retry shortly",
    retry_after=True,
)


class GuardedH11Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol under a :class:`ConnectionGuard` (subclassed per server by
    :func:`guarded_protocol`, which sets ``guard``)."""

    guard: ConnectionGuard

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._phase = ""
        self._timer: asyncio.TimerHandle | None = None
        self._body: BodyClock | None = None
        #: since when the connection waits for a request's head, and whether any of one came
        self._waiting_since, self._heard = self.loop.time(), False
        if not self.guard.admit(self, self.client[0] if self.client else "?"):
            self.guard.refused += 1
            transport.write(_REFUSAL)
            transport.close()
            return
        self._track()

    def connection_lost(self, exc: Exception | None) -> None:
        self.guard.release(self)
        self._stop_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        body = self._body if self._phase == BODY else None  # a body under way before these bytes
        super().data_received(data)
        if body is not None:
            body.sample(self.loop.time(), self._server_behind(), len(data))
        self._heard = True  # (what matters only while the phase stays HEAD: a head begun)
        self._track()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._track()

    def phase(self) -> str:
        """HEAD: no request is under way (the connection is new, or its last response is complete);
        BODY: a request's body is still coming; BUSY: the route has the whole request."""
        cycle = self.cycle
        if cycle is None or cycle.response_complete:
            return HEAD
        return BODY if cycle.more_body else BUSY

    def eviction_tier(self) -> int | None:
        """How surely closing this connection takes nothing from a client that asks: STUCK, it stopped in
        its request's head, or has asked nothing for ``grace_s``; SLOW_BODY, its body comes slower than
        ``body_min_rate`` (its grace spent); YOUNG_BODY, its body is still in its grace; FRESH, it is new
        and has sent nothing yet; None: keep it (its body keeps the rate, or the route has the request)."""
        now, limits = self.loop.time(), self.guard.limits
        phase = self.phase()
        if phase == HEAD:
            return FRESH if not self._heard and now - self._waiting_since <= limits.grace_s else STUCK
        if phase != BODY or self._phase != BODY or self._body is None:
            return None
        if self._body.lagging(now, limits):
            return SLOW_BODY
        return YOUNG_BODY if self._body.client_s(now) <= limits.grace_s else None

    def _server_behind(self) -> bool:
        """The client cannot be sending: uvicorn stopped reading (its buffer for the route is full), or
        the client waits for a ``100 Continue`` the route has not asked for yet."""
        return self.flow.read_paused or (self.cycle is not None and self.cycle.waiting_for_100_continue)

    def _track(self) -> None:
        """Start the clock of the phase the connection has just entered (none while busy)."""
        phase = self.phase()
        if phase == self._phase or self.transport.is_closing():
            return
        self._phase = phase
        self._stop_timer()
        self._body = None
        limits = self.guard.limits
        if phase == HEAD:
            self._waiting_since, self._heard = self.loop.time(), False
            self._timer = self.loop.call_later(limits.head_timeout_s, self._head_too_late)
        elif phase == BODY:
            now = self.loop.time()
            self._body = BodyClock(now, upload=bool(STREAMED.match(self.scope["path"])))
            self._body.sample(now, self._server_behind(), len(self.cycle.body))  # what came with the head
            self._timer = self.loop.call_later(self._body.left_s(now, limits), self._body_too_late)

    def _stop_timer(self) -> None:
        timer = getattr(self, "_timer", None)
        if timer is not None:
            timer.cancel()
            self._timer = None

    def _head_too_late(self) -> None:
        self._timer = None
        if self.phase() == HEAD and not self.transport.is_closing():
            self.guard.timed_out += 1
            self.guard.release(self)
            self.transport.close()

    def _body_too_late(self) -> None:
        """The body's deadline as it stood: past it, 408 and close; else (bytes came, or the server was
        behind) look again when the deadline is now due."""
        self._timer = None
        body, limits = self._body, self.guard.limits
        if body is None or self.phase() != BODY or self.transport.is_closing():
            return
        now = self.loop.time()
        behind = self._server_behind()
        body.sample(now, behind)
        left = body.left_s(now, limits)
        if left > 0 or behind:
            self._timer = self.loop.call_later(max(left, 1.0 if behind else 0.01), self._body_too_late)
            return
        self.guard.slow_bodies += 1
        self.guard.release(self)
        if not self.cycle.response_started:
            self.transport.write(_answer("408 Request Timeout", "request_timeout", body.why(now, limits)))
        self.transport.close()


def guarded_protocol(limits: ConnectionLimits) -> type[GuardedH11Protocol]:
    """An HTTP/1.1 protocol class for one server, with a guard of its own (uvicorn.Config's ``http``)."""
    attrs: dict[str, Any] = {"guard": ConnectionGuard(limits)}
    return type("KcoralHttpProtocol", (GuardedH11Protocol,), attrs)
