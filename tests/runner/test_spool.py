"""protocol.spool: chunks hashed and written on a worker thread, in order, from a thread (the client's
download) and from an event loop (the server's upload); a write's error reaches the caller. Real
files, no mocks."""

from __future__ import annotations

import asyncio
import errno
import hashlib
import io
import os
from pathlib import Path

import pytest

from kcoral.protocol.spool import Spool


def chunks(total: int) -> list[bytes]:
    """Random pieces of uneven sizes (1 byte to 300 KiB), like a socket's reads."""
    sizes = [1, 7, 65536, 300 << 10, 4096, 1 << 16, 123457]
    out, made, i = [], 0, 0
    while made < total:
        n = min(sizes[i % len(sizes)], total - made)
        out.append(os.urandom(n))
        made, i = made + n, i + 1
    return out


@pytest.mark.parametrize("total", [0, 1, 1 << 20, (5 << 20) + 3])
def test_put_then_finish_writes_everything_in_order_with_its_sha256(tmp_path: Path, total: int) -> None:
    pieces = chunks(total)
    with open(tmp_path / "f", "wb") as out, Spool(out, batch_bytes=256 << 10) as spool:
        for piece in pieces:
            spool.put(piece)
        got = spool.finish()
    data = b"".join(pieces)
    assert (tmp_path / "f").read_bytes() == data
    assert got == hashlib.sha256(data).hexdigest()
    assert spool.size == total


def test_the_async_side_writes_the_same(tmp_path: Path) -> None:
    pieces = chunks(3 << 20)

    async def run() -> str:
        with open(tmp_path / "f", "wb") as out, Spool(out, batch_bytes=512 << 10) as spool:
            for piece in pieces:
                await spool.put_async(piece)
            return await spool.finish_async()

    got = asyncio.run(run())
    data = b"".join(pieces)
    assert (tmp_path / "f").read_bytes() == data
    assert got == hashlib.sha256(data).hexdigest()


class FullDisk(io.RawIOBase):
    """A file that takes ``room`` bytes, then fails as a full disk does."""

    def __init__(self, room: int) -> None:
        self.room = room

    def writable(self) -> bool:
        return True

    def write(self, data: object) -> int:
        size = len(data)  # type: ignore[arg-type]
        if size > self.room:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.room -= size
        return size


def test_a_failed_write_is_raised_to_the_caller_and_the_worker_ends() -> None:
    spool = Spool(FullDisk(1 << 20), batch_bytes=1 << 20)  # type: ignore[arg-type]
    with pytest.raises(OSError) as caught, spool:
        for _ in range(8):
            spool.put(b"x" * (1 << 19))
        spool.finish()
    assert caught.value.errno == errno.ENOSPC


def test_a_failed_write_is_raised_in_the_event_loop() -> None:
    async def run() -> None:
        with Spool(FullDisk(0), batch_bytes=1) as spool:  # type: ignore[arg-type]
            await spool.put_async(b"abc")
            await spool.finish_async()

    with pytest.raises(OSError):
        asyncio.run(run())
