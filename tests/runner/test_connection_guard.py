"""The connection guard's rules (runner.connections) as pure logic: who is evicted to admit a new
connection, when one is refused, and when a request's body is too slow (BodyClock). (Over real sockets:
tests/integration/test_hostile_clients.py.)"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from kcoral.runner.connections import (
    FRESH,
    SLOW_BODY,
    STUCK,
    YOUNG_BODY,
    BodyClock,
    ConnectionGuard,
    GuardedH11Protocol,
)
from kcoral.runner.limits import ConnectionLimits


@dataclass(eq=False)
class Transport:
    closed: bool = False

    def close(self) -> None:
        self.closed = True


@dataclass(eq=False)
class Conn:
    """What the guard asks of a connection: whether it may be evicted and how surely (its eviction tier,
    None: never), and its transport."""

    tier: int | None = 0
    transport: Transport = field(default_factory=Transport)

    def eviction_tier(self) -> int | None:
        return self.tier


def admit(guard: ConnectionGuard, client: str, waiting: bool = True, tier: int | None = 0) -> tuple[Conn, bool]:
    conn = Conn(tier if waiting else None)
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


def test_a_stuck_head_goes_first_then_a_slow_body_then_the_youngest_young_body_then_a_fresh_one() -> None:
    guard = ConnectionGuard(ConnectionLimits(total=100, per_client=7))
    fresh, _ = admit(guard, "a", tier=FRESH)
    young_1, _ = admit(guard, "a", tier=YOUNG_BODY)
    slow_1, _ = admit(guard, "a", tier=SLOW_BODY)
    young_2, _ = admit(guard, "a", tier=YOUNG_BODY)
    slow_2, _ = admit(guard, "a", tier=SLOW_BODY)
    stuck, _ = admit(guard, "a", tier=STUCK)
    admit(guard, "a", waiting=False)
    everyone = (fresh, young_1, slow_1, young_2, slow_2, stuck)
    order = []
    for _ in everyone:
        _, ok = admit(guard, "a", waiting=False)  # each new one busy: never evicted itself
        assert ok
        order += [c for c in everyone if c.transport.closed and c not in order]
    assert order == [stuck, slow_1, slow_2, young_2, young_1, fresh]
    _, ok = admit(guard, "a")  # seven busy connections: nothing left to evict
    assert not ok and guard.evicted == 6


def test_release_forgets_a_connection_once() -> None:
    guard = ConnectionGuard(ConnectionLimits(total=3, per_client=3))
    conn, _ = admit(guard, "a")
    typed = cast(GuardedH11Protocol, cast(Any, conn))
    guard.release(typed)
    guard.release(typed)  # lost after it was evicted: no double count
    assert guard.open == {} and guard.by_client == {}


LIMITS = ConnectionLimits(body_timeout_s=20.0, body_min_rate=1000, grace_s=1.0)


def test_a_small_body_has_its_timeout_whatever_it_sends_and_an_upload_a_minimum_rate() -> None:
    small, upload = BodyClock(100.0, upload=False), BodyClock(100.0, upload=True)
    for clock in (small, upload):
        clock.sample(110.0, behind=False, received=15_000)
    assert small.left_s(110.0, LIMITS) == 10.0 and small.left_s(120.0, LIMITS) <= 0  # 20 s, bytes or not
    assert upload.left_s(120.0, LIMITS) == 15.0  # 20 s of grace, then a second per 1000 bytes sent
    upload.sample(134.0, behind=False, received=1_000)
    assert upload.left_s(134.0, LIMITS) == 2.0 and upload.left_s(136.0, LIMITS) <= 0


def test_time_the_server_spent_not_reading_is_not_the_clients() -> None:
    clock = BodyClock(0.0, upload=False)
    clock.sample(5.0, behind=True, received=100)  # the route's buffer is full: uvicorn stops reading
    assert clock.client_s(50.0) == 5.0 and clock.left_s(50.0, LIMITS) == 15.0
    clock.sample(60.0, behind=False)  # reading again
    assert clock.stalled == 55.0 and clock.client_s(70.0) == 15.0


def test_a_body_slower_than_the_minimum_rate_past_its_grace_may_be_evicted() -> None:
    stopped, steady = BodyClock(0.0, upload=False), BodyClock(0.0, upload=True)
    assert not stopped.lagging(0.9, LIMITS)  # its first second is not counted
    assert stopped.lagging(1.1, LIMITS)  # nothing came since its head
    for t in range(1, 60):
        steady.sample(float(t), behind=False, received=1000)
    assert not steady.lagging(59.5, LIMITS)  # 1000 bytes a second keeps it
    stopped.sample(1.5, behind=True)  # the server is behind: the client's time stands still meanwhile
    assert stopped.client_s(100.0) == 1.5
