"""Wake-ups for the streams that follow a job: the store says when it changed a job (from any
thread), and a stream waiting on that job (in the server's event loop) stops waiting at once,
instead of finding out at its next poll. A short job's end reaches its client without a poll's delay.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator


class Subscription:
    """One stream's interest in one job. ``clear()`` before reading the job, then ``wait()``: a
    change committed after the clear ends the wait (one committed before it is seen by the read)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.event = asyncio.Event()
        # a wake-up is on its way to the loop and no clear() came after it: later ones add nothing (a
        # job flooding its log wakes its follower per chunk; each wake was a call into the loop)
        self._pending = False
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._pending = False
        self.event.clear()

    async def wait(self, timeout: float) -> None:
        """Until the job changes or ``timeout`` seconds pass, whichever comes first."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.event.wait(), timeout)

    def wake(self) -> None:  # any thread
        with self._lock:
            if self._pending:
                return
            self._pending = True
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits any more
            self.loop.call_soon_threadsafe(self.event.set)


class JobChanges:
    """Who waits for which job; :meth:`changed` wakes them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subs: dict[str, set[Subscription]] = {}

    @contextlib.contextmanager
    def subscribe(self, job_id: str) -> Iterator[Subscription]:
        """Within the block, the subscription is woken by every change of ``job_id`` (call it in
        the event loop that waits)."""
        sub = Subscription(asyncio.get_running_loop())
        with self._lock:
            self._subs.setdefault(job_id, set()).add(sub)
        try:
            yield sub
        finally:
            with self._lock:
                subs = self._subs.get(job_id)
                if subs is not None:
                    subs.discard(sub)
                    if not subs:
                        del self._subs[job_id]

    def changed(self, job_id: str) -> None:
        """The store committed a change of ``job_id``: wake whoever follows it."""
        with self._lock:
            subs = list(self._subs.get(job_id, ()))
        for sub in subs:
            sub.wake()
