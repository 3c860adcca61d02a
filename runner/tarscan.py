"""A first pass over an uploaded tar, before ``tarfile`` reads it: decompress it as a stream and walk
its 512-byte headers, so that nothing the client chose makes the server allocate or unpack more than
the budgets allow.

``tarfile`` reads a PAX (``x``/``g``) or GNU long-name (``L``/``K``) member into memory whole, and
skips a directory's or a link's declared data by decompressing it; its own budget checks come too
late for both. Here every header's declared size counts: metadata members are capped at
:data:`META_BYTES` each, all other data against ``unpacked_bytes``, and a stream that ends early or
does not decompress is a clear 400 instead of an ``EOFError`` deep in ``tarfile``.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import zlib
from pathlib import Path
from typing import BinaryIO

from kcoral.protocol.errors import BadRequest, PayloadTooLarge
from kcoral.runner.limits import Limits

BLOCK = 512
#: the largest PAX or GNU long-name header accepted (a long path and a few attributes fit many times)
META_BYTES = 64 * 1024
_META_TYPES = frozenset(b"xgLK")
_READ = 1 << 20


def _open(path: Path) -> BinaryIO:
    with open(path, "rb") as f:
        magic = f.read(6)
    if magic.startswith(b"\x1f\x8b"):
        return gzip.open(path, "rb")  # type: ignore[return-value]
    if magic.startswith(b"\xfd7zXZ\x00"):
        return lzma.open(path, "rb")  # type: ignore[return-value]
    if magic.startswith(b"BZh"):
        return bz2.open(path, "rb")  # type: ignore[return-value]
    return open(path, "rb")


def header_size(header: bytes) -> int:
    field = header[124:136]
    if field[0] & 0x80:  # base-256, as GNU tar writes sizes over 8 GiB
        return int.from_bytes(field[1:], "big")
    text = field.split(b"\0", 1)[0].strip()
    try:
        return int(text or b"0", 8)
    except ValueError:
        raise BadRequest("the upload is not a readable tar archive: a header's size is not a number") from None


def checksum_ok(header: bytes) -> bool:
    text = header[148:156].split(b"\0", 1)[0].strip()
    try:
        stored = int(text, 8)
    except ValueError:
        return False
    unsigned = sum(header[:148]) + 8 * 0x20 + sum(header[156:])
    return stored == unsigned


def _skip(stream: BinaryIO, size: int, end: int | None) -> None:
    """Past a member's data: by seeking in a plain file (``end``: its size), else by reading."""
    left = size + (-size % BLOCK)
    if end is not None:
        if stream.tell() + left > end:
            raise BadRequest("the upload is truncated: the archive ends inside a member")
        stream.seek(left, 1)
        return
    while left:
        chunk = stream.read(min(left, _READ))
        if not chunk:
            raise BadRequest("the upload is truncated: the archive ends inside a member")
        left -= len(chunk)


def scan(path: Path, limits: Limits) -> None:
    """Refuse (4xx) an upload whose headers ask for more than the budgets, or that does not read to
    its end: metadata members over :data:`META_BYTES`, declared data over ``unpacked_bytes``, more
    headers than ``upload_files`` allows, a stream that is truncated or corrupt."""
    data = headers = 0
    try:
        with _open(path) as stream:
            end = os.fstat(stream.fileno()).st_size if isinstance(stream, io.BufferedReader) else None
            while True:
                header = stream.read(BLOCK)
                if len(header) < BLOCK:
                    if header.strip(b"\0") or headers == 0:
                        raise BadRequest("the upload is truncated: it ends inside a tar header")
                    return  # tar writers may leave out the end-of-archive blocks
                if not header.strip(b"\0"):
                    return  # end of archive: what follows is never read
                if not checksum_ok(header):
                    raise BadRequest("the upload is not a readable tar archive: a header's checksum is wrong")
                headers += 1
                size = header_size(header)
                if header[156] in _META_TYPES:
                    if size > META_BYTES:
                        raise PayloadTooLarge(
                            f"the upload has a {size}-byte tar metadata header; the limit is {META_BYTES}"
                        )
                else:
                    data += size
                    if data > limits.unpacked_bytes:
                        raise PayloadTooLarge(f"the upload unpacks to more than {limits.unpacked_bytes} bytes")
                if headers > 2 * limits.upload_files + 2:  # each entry may have one metadata header
                    raise PayloadTooLarge(f"the upload has more than {limits.upload_files} entries")
                _skip(stream, size, end)
    except (EOFError, zlib.error, lzma.LZMAError, gzip.BadGzipFile) as exc:
        raise BadRequest(f"the upload is truncated or its compression is corrupt: {exc}") from None
    except OSError as exc:  # bz2 and gzip report a corrupt stream as a plain OSError
        if exc.errno is not None:
            raise
        raise BadRequest(f"the upload's compression is corrupt: {exc}") from None
