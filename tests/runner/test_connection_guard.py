"""The connection guard's rules (runner.connections.ConnectionGuard) as pure logic: who is evicted to admit
a new connection, and when one is refused. (Over real sockets: tests/integration/test_hostile_clients.py.)"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from kcoral.runner.connections import ConnectionGuard, GuardedH11Protocol
from kcoral.runner.limits import ConnectionLimits


@dataclass(eq=False)
class Transport:
    closed: bool = False

    def close(self) -> None:
        self.closed = True


@dataclass(eq=False)
class Conn:
    """What the guard asks of a connection: whether it waits for a request's head, and its transport."""

    waiting: bool = True
    transport: Transport = field(default_factory=Transport)

    def waiting_for_head(self) -> bool:
        return self.waiting


def admit(guard: ConnectionGuard, client: str, waiting: bool = True) -> tuple[Conn, bool]:
    conn = Conn(waiting)
    return conn, guard.admit(cast(GuardedH11Protocol, cast(Any, conn)), client)


def test_past_a_clients_cap_its_oldest_waiting_connection_makes_room() -> None:
    guard = ConnectionGuard(ConnectionLimits(total=100, per_client=2))
    first, _ = admit(guard, "a")
    second, _ = admit(guard, "a")
    other, _ = admit(guard, "b")
    third, ok = admit(guard, "a")
    assert ok and first.transport.closed and not second.transport.closed and not other.transport.closed
    assert guard.by_client == {"a": 2, "b": 1} and guard.evicted == 1


def test_a_busy_connection_is_never_evicted_and_then_the_new_one_is_refused() -> None:
    guard = ConnectionGuard(ConnectionLimits(total=100, per_client=2))
    busy, _ = admit(guard, "a", waiting=False)
    waiting, _ = admit(guard, "a")
    _, ok = admit(guard, "a", waiting=False)
    assert ok and waiting.transport.closed and not busy.transport.closed  # the waiting one went, not the busy
    _, ok = admit(guard, "a")  # both of "a"'s connections are busy with requests: nothing to evict
    assert not ok and guard.by_client == {"a": 2} and guard.evicted == 1


def test_past_the_total_anyones_oldest_waiting_connection_makes_room() -> None:
    guard = ConnectionGuard(ConnectionLimits(total=3, per_client=10))
    busy, _ = admit(guard, "a", waiting=False)
    idle_b, _ = admit(guard, "b")
    idle_c, _ = admit(guard, "c")
    _, ok = admit(guard, "d")
    assert ok and idle_b.transport.closed and not idle_c.transport.closed and not busy.transport.closed
    assert len(guard.open) == 3 and guard.by_client == {"a": 1, "c": 1, "d": 1}


def test_release_forgets_a_connection_once() -> None:
    guard = ConnectionGuard(ConnectionLimits(total=3, per_client=3))
    conn, _ = admit(guard, "a")
    typed = cast(GuardedH11Protocol, cast(Any, conn))
    guard.release(typed)
    guard.release(typed)  # lost after it was evicted: no double count
    assert guard.open == {} and guard.by_client == {}
