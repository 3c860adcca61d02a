"""What a client's connections may hold: bounded in number, overall and per client address, and in time
until their request's head (its line and headers) has arrived.

A connection costs the server a file descriptor from the moment it is accepted, and uvicorn times out
only idle keep-alive connections: one that sends ``GET /v1/jobs HTTP/1.1`` and stops is held for good,
and ~20,000 of them (no token needed) took every descriptor and with them health checks and
submissions. So uvicorn's HTTP/1.1 protocol is wrapped (:func:`guarded_protocol`, given to uvicorn as
its ``http`` class) with three rules:

- a request's head must arrive within ``head_timeout_s`` of the connection's start, or of the end of
  its previous response (a keep-alive connection waiting for its next request); past it the
  connection is closed with no answer (it never asked anything);
- at most ``per_client`` connections from one client address and ``total`` in all. A new connection
  over either cap evicts the oldest connection that is still waiting for its request's head (of that
  address, for the per-client cap): a client that completes its requests is never displaced by one
  that holds connections open without asking, so health checks and real clients keep being answered
  while an attacker holds the cap. When none can be evicted (every connection is busy with a request),
  the new one is answered 503 ``too_many_connections`` with ``Retry-After`` and closed;
- the counts are the server's own (one event loop: no lock), released when a connection is lost.
"""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from kcoral.runner.limits import ConnectionLimits


class ConnectionGuard:
    """The open connections of one server, oldest first, and who may be evicted to admit a new one."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self.open: OrderedDict[GuardedH11Protocol, str] = OrderedDict()
        self.by_client: dict[str, int] = {}
        #: connections closed to admit others, or for a head that never came, and refused (the bench's figures)
        self.evicted = 0
        self.timed_out = 0
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
        """Close the oldest connection (of ``client``, or of anyone) that is waiting for a request's head."""
        for conn, whose in self.open.items():
            if (client is None or whose == client) and conn.waiting_for_head():
                self.release(conn)
                self.evicted += 1
                conn.transport.close()
                return True
        return False


#: the answer to a connection refused at the cap (it may not have sent anything yet)
_REFUSAL = json.dumps(
    {
        "error": "too_many_connections",
        "message": "the server holds as many connections as it takes, each busy with a request: retry shortly",
    }
).encode()


class GuardedH11Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol under a :class:`ConnectionGuard` (subclassed per server by
    :func:`guarded_protocol`, which sets ``guard``)."""

    guard: ConnectionGuard

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_timer: asyncio.TimerHandle | None = None
        if not self.guard.admit(self, self.client[0] if self.client else "?"):
            self.guard.refused += 1
            transport.write(
                b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\n"
                b"connection: close\r\ncontent-length: " + str(len(_REFUSAL)).encode() + b"\r\n\r\n" + _REFUSAL
            )
            transport.close()
            return
        self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self.guard.release(self)
        self._stop_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if not self.waiting_for_head():
            self._stop_head_timer()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.waiting_for_head():
            self._await_head()

    def waiting_for_head(self) -> bool:
        """No request is under way: the connection is new, or its last response is complete."""
        return self.cycle is None or self.cycle.response_complete

    def _await_head(self) -> None:
        self._stop_head_timer()
        self._head_timer = self.loop.call_later(self.guard.limits.head_timeout_s, self._head_too_late)

    def _stop_head_timer(self) -> None:
        timer = getattr(self, "_head_timer", None)
        if timer is not None:
            timer.cancel()
            self._head_timer = None

    def _head_too_late(self) -> None:
        self._head_timer = None
        if self.waiting_for_head() and not self.transport.is_closing():
            self.guard.timed_out += 1
            self.guard.release(self)
            self.transport.close()


def guarded_protocol(limits: ConnectionLimits) -> type[GuardedH11Protocol]:
    """An HTTP/1.1 protocol class for one server, with a guard of its own (uvicorn.Config's ``http``)."""
    attrs: dict[str, Any] = {"guard": ConnectionGuard(limits)}
    return type("KcoralHttpProtocol", (GuardedH11Protocol,), attrs)
