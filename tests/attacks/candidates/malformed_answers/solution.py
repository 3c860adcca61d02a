"""Issue 8, class 9 (malformed claims): from setup(), find this worker's channel to the supervisor and
send it malformed answers: a JSON nesting bomb, a list, a string where a flag belongs, a message over
the size limit, and a file descriptor. Each is the candidate's failure (an ERROR for the case, the
evaluation failed), never an infrastructure error."""

import gc
import os

from kcoral.tasks.harness.channel import Channel


def setup(data):
    chan = next(o for o in gc.get_objects() if isinstance(o, Channel))
    for raw in (b"[" * 60000, b"[1, 2]", b'{"ok": "yes", "error": 7}', b"{" + b" " * 70000 + b"}", b"\xff\xfe"):
        try:
            chan.sock.send(raw)
        except OSError as exc:
            print("send refused:", exc, flush=True)
    r, _ = os.pipe()
    try:
        import socket

        socket.send_fds(chan.sock, [b'{"ok": true}'], [r])
    except OSError as exc:
        print("fd send refused:", exc, flush=True)
    raise RuntimeError("malformed answers sent")
