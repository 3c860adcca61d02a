"""A container's output from the Docker engine, each piece with its stream (docker-py's ``logs``
drops it).

The live output comes through an attach opened before the container starts (or, for a standby,
before it is handed its job), so it holds every byte: the engine copies what the container writes
to it as it reads it from the container's pipes, in pieces as large as what was waiting there (not a
piece per line, as its log endpoint sends them), and ends it once the container has exited and all
was copied. A slow reader holds the container back (the engine buffers about 1 MB for it) instead
of leaving a backlog to read after its kill. (Before, the log endpoint was read through docker-py a
frame header and a payload at a time, several calls deep each: a job printing short lines kept the
server a core busy and its verdict a minute or two behind its kill; bench/lineflood.py.) Pieces of the
two streams can meet inside a line here; runner.wholelines holds them apart for the log.

Where that stream broke, :func:`missed_output` reads the rest from the engine's log (the container's
log driver keeps all of it too), skipping per stream what the attach brought. Both streams are framed
the same way (runner.logframes) and read in reads of up to READ_BYTES, undone from that buffer.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import docker.errors

from kcoral.protocol.framing import STDERR, STDOUT
from kcoral.runner.logframes import ChunkedBody, EngineFrames, StreamError

#: the most bytes one read of the engine's stream takes
READ_BYTES = 256 << 10
#: after a read of fewer bytes than this, the next waits COALESCE_S: a job printing short lines then
#: costs a read (and a log write) per few dozen KiB, not per line, for at most that much delay; one
#: printing large blocks is read as fast as it prints (a wait after a large read would hold it back)
COALESCE_BYTES = 16 << 10
COALESCE_S = 0.02


class EngineStreamError(docker.errors.DockerException):
    """The engine's output stream broke off or is not what the engine sends."""


class ContainerOutput:
    """A container's stdout and stderr from an attach: open it before the container starts (or takes
    its job); :meth:`batches` then reads until the container has exited. ``received`` counts the
    bytes read per stream (for :func:`missed_output`, should the stream break)."""

    def __init__(self, container: Any) -> None:
        self.container = container
        api = container.client.api
        params = {"stdout": 1, "stderr": 1, "stream": 1, "logs": 0}
        headers = {"Connection": "Upgrade", "Upgrade": "tcp"}
        self._response = api._post(
            api._url("/containers/{0}/attach", container.id), params=params, headers=headers, stream=True
        )
        try:
            api._raise_for_status(self._response)
            api._disable_socket_timeout(api._get_raw_response_socket(self._response))  # a quiet job sends nothing
            self._read = _raw_reader(self._response)
        except BaseException:
            self._response.close()
            raise
        self.received = {STDOUT: 0, STDERR: 0}

    def batches(self) -> Iterator[list[tuple[int, bytes]]]:
        """(stream id, bytes) pieces, a batch per read (the pieces of one stream in a row joined),
        until the container has exited; EngineStreamError where the stream breaks off."""
        frames = EngineFrames()
        try:
            while data := _read(self._read):
                batch = _feed(frames, data)
                for stream, piece in batch:
                    self.received[stream] = self.received.get(stream, 0) + len(piece)
                if batch:
                    yield batch
                if len(data) < COALESCE_BYTES:
                    time.sleep(COALESCE_S)
        finally:
            self.close()
        if frames.partial:
            raise EngineStreamError("the container's output stream was cut short")

    def close(self) -> None:
        self._response.close()


def missed_output(container: Any, received: dict[int, int]) -> Iterator[list[tuple[int, bytes]]]:
    """What the engine's log of ``container`` holds past the ``received`` bytes of each stream,
    in batches: the rest of an output stream that broke off. The log is read from its start."""
    skip = dict(received)
    for batch in _logged(container):
        rest = []
        for stream, piece in batch:
            drop = min(skip.get(stream, 0), len(piece))
            skip[stream] = skip.get(stream, 0) - drop
            if drop < len(piece):
                rest.append((stream, piece[drop:]))
        if rest:
            yield rest


def _logged(container: Any) -> Iterator[list[tuple[int, bytes]]]:
    """The engine's log of the container as it is now, in batches."""
    api = container.client.api
    params = {"stdout": 1, "stderr": 1, "follow": 0, "timestamps": 0, "tail": "all"}
    response = api._get(api._url("/containers/{0}/logs", container.id), params=params, stream=True)
    try:
        api._raise_for_status(response)
        chunked, read = _body_reader(response)
        body = ChunkedBody() if chunked else None
        frames = EngineFrames()
        while (body is None or not body.done) and (data := _read(read)):
            try:
                parts = body.feed(data) if body is not None else [memoryview(data)]
            except StreamError as exc:
                raise EngineStreamError(f"the engine's log is garbled: {exc}") from None
            if batch := _feed(frames, parts):
                yield batch
        if (body is not None and not body.done) or frames.partial:
            raise EngineStreamError("the engine's log was cut short")
    finally:
        response.close()


def _read(read: Any) -> bytes:
    try:
        return bytes(read(READ_BYTES))
    except OSError as exc:
        raise EngineStreamError(f"the engine's stream broke: {exc}") from None


def _feed(frames: EngineFrames, data: bytes | list[memoryview]) -> list[tuple[int, bytes]]:
    try:
        return frames.feed(data)
    except StreamError as exc:
        raise EngineStreamError(f"the engine's stream is garbled: {exc}") from None


def _raw_reader(response: Any) -> Any:
    """A ``read(n)`` of what follows the response's head on its connection (an attach's stream, which
    is no HTTP body): the buffered socket under http.client's response, which may hold its first bytes."""
    fp = getattr(getattr(response.raw, "_fp", None), "fp", None)
    if fp is None or not hasattr(fp, "read1"):
        raise EngineStreamError("the engine's attach stream cannot be read here")
    return fp.read1


def _body_reader(response: Any) -> tuple[bool, Any]:
    """Whether the response body comes in HTTP's chunked coding as read, and a ``read(n)`` of it that
    returns what has come (at most ``n`` bytes, b"" at its end): a chunked body (the engine's way) is
    read as sent from the buffered socket under http.client's response, where nothing read it yet;
    any other, through urllib3 (which knows where a body of known length ends)."""
    inner = getattr(response.raw, "_fp", None)
    fp: Any = getattr(inner, "fp", None)
    if getattr(inner, "chunked", False) and getattr(inner, "chunk_left", 0) is None and hasattr(fp, "read1"):
        return True, fp.read1
    return False, getattr(response.raw, "read1", response.raw.read)
