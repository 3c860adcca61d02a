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
