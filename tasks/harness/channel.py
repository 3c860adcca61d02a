"""The supervisor <-> worker channel: one JSON object per message over a Unix SOCK_SEQPACKET socket.

Stdlib only. SEQPACKET keeps message boundaries, so a message is read whole or not at all. The
supervisor sends file descriptors (shared CPU buffers) with its messages; it never accepts any
from a worker (``recv`` passes no room for them, so the kernel discards what a worker sends).
Everything a worker sends is untrusted: size-capped, parsed strictly, and a malformed, oversized
or late message is a ``ChannelError`` (the candidate's failure, never the supervisor's).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import time
from typing import Any

#: bytes in one message, either way
MAX_MESSAGE = 64 << 10
#: file descriptors the supervisor passes with one message
MAX_FDS = 64


class ChannelError(Exception):
    """The peer closed the channel, broke the protocol or did not answer in time."""


class NoAnswer(ChannelError):
    """The peer said nothing within the time it was given."""


class Channel:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def send(self, message: dict[str, Any], fds: list[int] | None = None) -> None:
        data = json.dumps(message, separators=(",", ":")).encode()
        if len(data) > MAX_MESSAGE:
            raise ChannelError(f"message of {len(data)} bytes is over the {MAX_MESSAGE}-byte limit")
        try:
            if fds:
                socket.send_fds(self.sock, [data], fds)
            else:
                self.sock.send(data)
        except OSError as exc:
            raise ChannelError(f"the peer is gone ({exc.strerror or exc})") from None

    def ready(self) -> bool:
        """Whether a message (or the peer's end) is waiting to be read."""
        return bool(select.select([self.sock], [], [], 0)[0])

    def recv(self, timeout: float | None = None, spin: bool = False) -> dict[str, Any]:
        """The next message, without file descriptors (what the supervisor reads from a worker).
        ``spin``: poll for it without sleeping (the answer of a process on another core, while a call
        is timed: a sleeping core's wake-up is no part of the call; see Supervisor.call)."""
        if spin and timeout is not None:
            self._spin(timeout)
            timeout = 0.0  # a message is waiting
        message, _ = self._recv(timeout, with_fds=False)
        return message

    def _spin(self, timeout: float) -> None:
        """Return once a message (or the peer's end) is waiting, polling; ChannelError past ``timeout``."""
        deadline = time.monotonic() + timeout
        sock = [self.sock]
        while not select.select(sock, [], [], 0)[0]:
            if time.monotonic() > deadline:
                raise NoAnswer(f"no answer within {timeout:.0f} s")

    def recv_with_fds(self, timeout: float | None = None) -> tuple[dict[str, Any], list[int]]:
        """The next message and the descriptors passed with it (what a worker reads)."""
        return self._recv(timeout, with_fds=True)

    def _recv(self, timeout: float | None, with_fds: bool) -> tuple[dict[str, Any], list[int]]:
        if timeout is not None:
            ready, _, _ = select.select([self.sock], [], [], max(0.0, timeout))
            if not ready:
                raise NoAnswer(f"no answer within {timeout:.0f} s")
        try:
            if with_fds:
                data, fds, flags, _ = socket.recv_fds(self.sock, MAX_MESSAGE + 1, MAX_FDS)
            else:
                data, _, flags, _ = self.sock.recvmsg(MAX_MESSAGE + 1)
                fds = []
        except OSError as exc:
            raise ChannelError(f"the peer is gone ({exc.strerror or exc})") from None
        if not data:
            raise ChannelError("the peer closed the channel")
        if len(data) > MAX_MESSAGE or flags & getattr(socket, "MSG_TRUNC", 0):
            _close(fds)
            raise ChannelError(f"a message over the {MAX_MESSAGE}-byte limit")
        return parse(data), fds

    def close(self) -> None:
        self.sock.close()


def parse(data: bytes) -> dict[str, Any]:
    """A JSON object, or ChannelError (bad UTF-8, bad JSON, nesting bombs, not an object)."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ChannelError(f"a malformed message ({type(exc).__name__})") from None
    if not isinstance(doc, dict):
        raise ChannelError(f"a message that is not a JSON object ({type(doc).__name__})")
    return doc


def listen(path: str) -> socket.socket:
    """The supervisor's listening socket; anyone who can reach the file may connect (mode 0777)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    sock.bind(path)
    os.chmod(path, 0o777)
    sock.listen(1)
    return sock


def accept(listener: socket.socket, timeout: float) -> tuple[Channel, int]:
    """The first peer to connect, and its pid as the kernel saw it (SO_PEERCRED)."""
    ready, _, _ = select.select([listener], [], [], timeout)
    if not ready:
        raise ChannelError(f"the candidate's worker did not connect within {timeout:.0f} s")
    conn, _ = listener.accept()
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
    pid = int.from_bytes(creds[:4], "little")
    return Channel(conn), pid


def connect(path: str, timeout: float) -> Channel:
    """Connect to the supervisor, waiting for its socket to appear."""
    deadline = time.monotonic() + timeout
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            sock.connect(path)
            return Channel(sock)
        except OSError:
            sock.close()
            if time.monotonic() > deadline:
                raise ChannelError(f"no supervisor at {path} within {timeout:.0f} s") from None
            time.sleep(0.05)


def pair() -> tuple[Channel, socket.socket]:
    """A connected pair: the supervisor's end, and the socket to hand to a child process."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    return Channel(ours), theirs


def _close(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
