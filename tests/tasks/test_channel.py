"""The supervisor <-> worker channel (tasks.harness.channel): real Unix sockets, no Docker."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kcoral.tasks.harness.channel import MAX_MESSAGE, Channel, ChannelError, accept, connect, listen
from kcoral.tasks.harness.channel import pair as _pair

_open: list[socket.socket] = []


def pair() -> tuple[Channel, socket.socket]:
    """A connected pair, closed after the test (the suite runs with -W error: no unclosed sockets)."""
    ours, theirs = _pair()
    _open.extend([ours.sock, theirs])
    return ours, theirs


@pytest.fixture(autouse=True)
def _close_sockets() -> Iterator[None]:
    yield
    while _open:
        _open.pop().close()


def test_messages_and_fds_cross() -> None:
    ours, theirs = pair()
    worker = Channel(theirs)
    r, w = os.pipe()
    ours.send({"op": "setup", "n": 1}, [r])
    message, fds = worker.recv_with_fds(5)
    assert message == {"op": "setup", "n": 1} and len(fds) == 1
    os.write(w, b"x")
    assert os.read(fds[0], 1) == b"x"
    worker.send({"ok": True})
    assert ours.recv(5) == {"ok": True}
    for fd in (r, w, *fds):
        os.close(fd)


@pytest.mark.parametrize(
    "raw", [b"[" * 60000, b"[1, 2]", b"\xff\xfe", b'"ok"', b"{" + b" " * (MAX_MESSAGE + 10) + b"}"]
)
def test_malformed_answers_are_channel_errors(raw: bytes) -> None:
    ours, theirs = pair()
    theirs.send(raw)
    with pytest.raises(ChannelError):
        ours.recv(5)


def test_fds_sent_by_a_worker_are_dropped() -> None:
    ours, theirs = pair()
    r, w = os.pipe()
    socket.send_fds(theirs, [b'{"ok": true}'], [r])
    before = len(os.listdir("/proc/self/fd"))
    assert ours.recv(5) == {"ok": True}
    assert len(os.listdir("/proc/self/fd")) == before  # nothing was installed in the supervisor
    os.close(r)
    os.close(w)


def test_silence_and_close() -> None:
    ours, theirs = pair()
    with pytest.raises(ChannelError, match="no answer"):
        ours.recv(0.1)
    theirs.close()
    with pytest.raises(ChannelError, match="closed"):
        ours.recv(1)


def test_listen_accept_connect_and_peer_pid(tmp_path: Path) -> None:
    path = str(tmp_path / "s.sock")
    listener = listen(path)
    _open.append(listener)
    assert os.stat(path).st_mode & 0o777 == 0o777
    got: list[Channel] = []
    t = threading.Thread(target=lambda: got.append(connect(path, 5)))
    t.start()
    chan, pid = accept(listener, 5)
    t.join()
    _open.extend([chan.sock, got[0].sock])
    assert pid == os.getpid()
    got[0].send({"ok": True})
    assert chan.recv(5) == {"ok": True}
    with pytest.raises(ChannelError, match="did not connect"):
        accept(listener, 0.1)


def test_oversized_outgoing_message_is_refused() -> None:
    ours, _ = pair()
    with pytest.raises(ChannelError, match="limit"):
        ours.send({"x": "a" * (MAX_MESSAGE + 1)})


def test_a_spinning_read_gets_the_message_and_says_when_none_came() -> None:
    """The supervisor's polling read (a worker on another core, while a call is timed): the same
    message, the same errors for silence and a closed peer."""
    ours, theirs = pair()
    threading.Timer(0.05, lambda: theirs.send(b'{"ok": true}')).start()
    assert ours.recv(5, spin=True) == {"ok": True}
    with pytest.raises(ChannelError, match="no answer within"):
        ours.recv(0.1, spin=True)
    theirs.close()
    with pytest.raises(ChannelError, match="closed"):
        ours.recv(1, spin=True)
