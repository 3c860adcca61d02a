"""A stream of chunks into a file with its sha256, hashed and written on a thread of its own.

Both ends of a transfer read a socket in small pieces (the server's upload in up to 256 KiB, the
client's download in 64 KiB) and must hash and write every byte. Done in the reading thread, the
socket waits while they run. Here the reader gathers chunks into batches of :data:`BATCH_BYTES`
and one worker thread hashes and writes each batch while the reader gathers the next: two batches
in memory at most (and the worker's joined copy of one), whatever the stream's length.

A batch is joined into one buffer first: ``hashlib`` and ``write`` let go of the GIL only inside
each call, and a worker making one call per small chunk waited for the GIL, held by the busy
reader, before each of them (the upload was no faster than without a worker).

Two workers: one joins a batch, hands the joined buffer to the other, which writes it, and hashes
it meanwhile (on a machine of two cores, hashing and writing 100 MB each take ~60 ms: side by side,
the spool keeps up with a socket read at ~1 GB/s).

The server awaits the workers (:meth:`Spool.put_async`, :meth:`Spool.finish_async`); the client
waits for them (:meth:`Spool.put`, :meth:`Spool.finish`). A write's error (a full disk) is raised by
the next call of either.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, BinaryIO

#: bytes gathered before a batch goes to the worker
BATCH_BYTES = 1 << 20


class Spool:
    """Writes the chunks put into ``out``, in order, and hashes them (sha256). Call :meth:`close`
    (or use it as a context manager) whatever happens: it waits for the workers."""

    def __init__(
        self, out: BinaryIO, batch_bytes: int = BATCH_BYTES, also: Callable[[bytes], None] | None = None
    ) -> None:
        self._out = out
        self._batch_bytes = batch_bytes
        self._digest = hashlib.sha256()
        self._hasher = ThreadPoolExecutor(1, thread_name_prefix="kcoral-spool-hash")
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="kcoral-spool-write")
        #: ``also`` gets every byte too, in order, on a thread of its own (runner.tarstage)
        self._also = also
        self._also_worker = ThreadPoolExecutor(1, thread_name_prefix="kcoral-spool-also") if also else None
        #: the batch being hashed; its result: the futures of its write (and of ``also``)
        self._pending: Future[list[Future[Any]]] | None = None
        self._batch: list[bytes] = []
        self._gathered = 0
        #: bytes put so far
        self.size = 0

    def _hash(self, batch: list[bytes]) -> list[Future[Any]]:
        data = batch[0] if len(batch) == 1 else b"".join(batch)
        done: list[Future[Any]] = [self._writer.submit(self._out.write, data)]  # in order: one thread each
        if self._also_worker is not None and self._also is not None:
            done.append(self._also_worker.submit(self._also, data))
        self._digest.update(data)
        return done

    def _gather(self, chunk: bytes) -> bool:
        """Add ``chunk`` to the batch; True when the batch is full."""
        self._batch.append(chunk)
        self._gathered += len(chunk)
        self.size += len(chunk)
        return self._gathered >= self._batch_bytes

    def _hand_over(self) -> None:
        batch, self._batch, self._gathered = self._batch, [], 0
        if batch:
            self._pending = self._hasher.submit(self._hash, batch)

    def _take_pending(self) -> Future[list[Future[Any]]] | None:
        pending, self._pending = self._pending, None
        return pending

    def put(self, chunk: bytes) -> None:
        if self._gather(chunk):
            self._wait()
            self._hand_over()

    def finish(self) -> str:
        """Write what is left; the sha256 (hex) of everything put."""
        self._wait()
        self._hand_over()
        self._wait()
        return self._digest.hexdigest()

    def _wait(self) -> None:
        if (pending := self._take_pending()) is not None:
            for done in pending.result():
                done.result()

    async def put_async(self, chunk: bytes) -> None:
        """:meth:`put` in an event loop: it waits for the worker without blocking the loop."""
        if self._gather(chunk):
            await self._settle()
            self._hand_over()

    async def finish_async(self) -> str:
        await self._settle()
        self._hand_over()
        await self._settle()
        return self._digest.hexdigest()

    async def _settle(self) -> None:
        import asyncio  # the client's spool never needs it (its start-up imports stay few)

        if (pending := self._take_pending()) is not None:
            for done in await asyncio.wrap_future(pending):
                await asyncio.wrap_future(done)

    def close(self) -> None:
        """Wait for a batch still being written (a transfer cut off) and end the workers."""
        self._hasher.shutdown(wait=True)
        self._writer.shutdown(wait=True)
        if self._also_worker is not None:
            self._also_worker.shutdown(wait=True)

    def __enter__(self) -> Spool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
