"""runner.changes: a change committed by another thread ends a stream's wait at once."""

from __future__ import annotations

import asyncio
import threading
import time

from kcoral.runner.changes import JobChanges


def test_a_change_from_another_thread_ends_the_wait_and_others_jobs_do_not() -> None:
    changes = JobChanges()

    async def follow() -> tuple[float, float]:
        with changes.subscribe("a") as sub:
            sub.clear()
            threading.Timer(0.05, changes.changed, ("b",)).start()  # another job: no wake-up
            t0 = time.monotonic()
            await sub.wait(0.5)
            other = time.monotonic() - t0
            sub.clear()
            threading.Timer(0.05, changes.changed, ("a",)).start()
            t0 = time.monotonic()
            await sub.wait(30)
            return other, time.monotonic() - t0

    other, own = asyncio.run(follow())
    assert other >= 0.45  # the whole pause: job b's change is not job a's
    assert own < 10  # woken by the change, long before the 30 s pause ends
    assert changes._subs == {}  # the block's end unsubscribes


def test_a_change_before_the_wait_but_after_the_clear_is_not_lost() -> None:
    changes = JobChanges()

    async def follow() -> float:
        with changes.subscribe("a") as sub:
            sub.clear()
            changes.changed("a")  # committed between the read and the wait
            t0 = time.monotonic()
            await sub.wait(30)
            return time.monotonic() - t0

    assert asyncio.run(follow()) < 10


def test_a_change_after_the_loop_closed_is_ignored() -> None:
    changes = JobChanges()
    kept = []

    async def follow() -> None:
        cm = changes.subscribe("a")
        kept.append(cm.__enter__())

    asyncio.run(follow())  # the loop is closed now, the subscription still registered
    changes.changed("a")  # must not raise


def test_wake_ups_before_the_next_clear_reach_the_loop_once() -> None:
    """A job that floods its log wakes its follower per chunk: one call into the loop until the
    follower clears and reads again, not one per chunk."""
    changes = JobChanges()
    calls = []

    async def follow() -> tuple[int, int]:
        with changes.subscribe("a") as sub:
            loop = sub.loop
            original = loop.call_soon_threadsafe
            loop.call_soon_threadsafe = lambda *a: calls.append(a) or original(*a)  # type: ignore[method-assign]
            sub.clear()
            flood = threading.Thread(target=lambda: [changes.changed("a") for _ in range(1000)])
            flood.start()
            flood.join()
            await sub.wait(30)
            first = len(calls)
            sub.clear()  # read again: the next change wakes it again
            threading.Thread(target=changes.changed, args=("a",)).start()
            t0 = time.monotonic()
            await sub.wait(30)
            assert time.monotonic() - t0 < 10
            return first, len(calls)

    assert asyncio.run(follow()) == (1, 2)
