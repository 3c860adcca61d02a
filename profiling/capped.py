"""Reading a file a job wrote, within bounds: only a regular file (never a FIFO or a device, which could
block or never end), at most so many bytes, and gzip unpacked to at most so many bytes (a small file
that unzips to gigabytes is refused, not unpacked). Errors are the caller's class, with one line.

Stdlib only: the summarisers of the profilers' traces (iket_load, gputrace_load) use it.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import stat
import zlib
from typing import IO

GZIP_MAGIC = b"\x1f\x8b"


def size_text(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n} bytes"


def open_regular(path: str, error: type[Exception]) -> IO[bytes]:
    """``path`` opened for reading, if it is a regular file (``error`` raised otherwise)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise error(f"{path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise error(f"{path}: not a regular file")
    return os.fdopen(fd, "rb")


def read_at_most(
    f: IO[bytes], limit: int, source: str, error: type[Exception], what: str = "a trace", head: bytes = b""
) -> bytes:
    """``head`` (bytes of ``f`` already read) and the rest of ``f``, if that is at most ``limit`` bytes."""
    data = head + f.read(limit + 1 - len(head))
    if len(data) > limit:
        raise error(f"{source}: larger than {size_text(limit)}, the most {what} is read to")
    return data


def gunzip(data: bytes, limit: int, source: str, error: type[Exception]) -> bytes:
    """``data`` unzipped, if that is at most ``limit`` bytes."""
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
            out = f.read(limit + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise error(f"{source or 'input'}: a broken gzip file: {exc}") from None
    if len(out) > limit:
        raise error(f"{source or 'input'}: unzips to more than {size_text(limit)}")
    return out


def parse_json(data: bytes | str, source: str, error: type[Exception]) -> object:
    """``data`` as JSON; ``error`` when it is not JSON, is nested too deep or holds an integer too long to read."""
    try:
        return json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise error(f"{source or 'input'}: not JSON: {exc}") from None
    except RecursionError:
        raise error(f"{source or 'input'}: JSON nested too deep") from None
    except ValueError as exc:  # an integer of more than sys.get_int_max_str_digits() digits
        raise error(f"{source or 'input'}: not readable JSON: {exc}") from None
