"""A container's output from the Docker engine with each piece's stream (docker-py's ``logs`` drops it).

The engine frames a non-TTY container's log as it frames an attach stream: an 8-byte header (the
stream id, three zero bytes, a 32-bit big-endian length) before each piece.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kcoral.runner.joblog import FRAME_HEADER


def container_output(container: Any, follow: bool) -> Iterator[tuple[int, bytes]]:
    """(stream id, bytes) as the engine has them; with ``follow``, until the container has exited."""
    api = container.client.api
    params = {"stdout": 1, "stderr": 1, "follow": int(follow), "timestamps": 0, "tail": "all"}
    response = api._get(api._url("/containers/{0}/logs", container.id), params=params, stream=True)
    try:
        api._raise_for_status(response)
        if follow:  # a quiet job sends nothing for a long time
            api._disable_socket_timeout(api._get_raw_response_socket(response))
        while True:
            header = _read_exactly(response.raw, FRAME_HEADER.size)
            if len(header) < FRAME_HEADER.size:
                return
            stream, length = FRAME_HEADER.unpack(header)
            data = _read_exactly(response.raw, length)
            if data:
                yield stream, data
            if len(data) < length:
                return
    finally:
        response.close()


def _read_exactly(raw: Any, n: int) -> bytes:
    parts: list[bytes] = []
    while n > 0:
        part = raw.read(n)
        if not part:
            break
        parts.append(part)
        n -= len(part)
    return b"".join(parts)
