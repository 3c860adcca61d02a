"""A Unix-socket proxy in front of the Docker engine that a test can stop and start: the server under
test talks to the engine through it (DOCKER_HOST), so the engine can vanish for that server while
the shared engine itself is never touched. It can also vanish at a chosen request (:meth:`EngineProxy.
cut_at`): the engine never sees that request, as when it goes away between two calls of the server."""

from __future__ import annotations

import contextlib
import re
import socket
import threading
from pathlib import Path

ENGINE = "/var/run/docker.sock"


class EngineProxy:
    def __init__(self, path: Path, target: str = ENGINE) -> None:
        self.path, self.target = path, target
        self._listener: socket.socket | None = None
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._stopped = True
        self._cut: re.Pattern[bytes] | None = None
        #: set when the request given to :meth:`cut_at` came and the proxy stopped at it
        self.cut = threading.Event()

    def cut_at(self, request: bytes) -> EngineProxy:
        """Stop (as :meth:`stop`) at the first request from the server that matches the regular
        expression ``request``, before the engine sees any of it; :attr:`cut` is set then."""
        self._cut = re.compile(request)
        self.cut.clear()
        return self

    @property
    def docker_host(self) -> str:
        return f"unix://{self.path}"

    def start(self) -> EngineProxy:
        self.path.unlink(missing_ok=True)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(self.path))
        listener.listen(64)
        self._listener = listener
        with self._lock:
            self._stopped = False
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    def stop(self) -> None:
        """The engine is gone: no new connection, and every open one is cut."""
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
            self._listener = None
        with self._lock:
            self._stopped = True  # a connection accepted meanwhile is cut as it is registered (_accept)
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            self._open.clear()
        self.path.unlink(missing_ok=True)

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            engine = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                engine.connect(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._stopped or self._listener is not listener:  # stopped while this one was accepted
                    client.close()
                    engine.close()
                    return
                self._open |= {client, engine}
            for src, dst, asks in ((client, engine, True), (engine, client, False)):
                threading.Thread(target=self._pump, args=(src, dst, asks), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, asks: bool) -> None:
        """Copy ``src`` to ``dst``; ``asks``: ``src`` is the server's side (its requests)."""
        try:
            while data := src.recv(1 << 16):
                cut = self._cut
                if asks and cut is not None and cut.search(data):
                    self._cut = None
                    self.stop()
                    self.cut.set()
                    return
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)
