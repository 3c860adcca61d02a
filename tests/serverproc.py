"""A kcoral server in its own process (``python -m kcoral serve``), as an operator runs it: for the
tests that kill or restart it and for the benches. In-process servers are tests.conftest's."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import docker
import httpx

from kcoral.runner.sandbox import LABEL_INSTANCE
from kcoral.runner.settings import Settings

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerProcess:
    """``kcoral serve`` on loopback without GPUs, in its own process group, up once health answers."""

    def __init__(
        self,
        data_dir: Path,
        image: str,
        cpu_slots: int = 1,
        port: int | None = None,
        *extra: str,
        env: dict[str, str] | None = None,
        log: Path | None = None,
    ) -> None:
        self.data_dir, self.image, self.cpu_slots = data_dir, image, cpu_slots
        #: where the server's stdout and stderr go (None: this process's)
        self.log = log
        self.port = port or free_port()
        self.extra = extra
        self.env = env or {}
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 30) -> ServerProcess:
        """Start the server and wait for its health check; AssertionError when it does not come up."""
        out = open(self.log, "ab") if self.log is not None else None  # noqa: SIM115 - the child keeps it
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kcoral", "serve", "--port", str(self.port), "--data-dir", str(self.data_dir),
             "--image", self.image, "--gpus", "none", "--cpu-slots", str(self.cpu_slots),
             "--log-level", "warning", *self.extra],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT), **self.env},
            start_new_session=True, stdout=out, stderr=subprocess.STDOUT if out else None,
        )  # fmt: skip
        if out is not None:
            out.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"the server exited with {self.proc.returncode} before it answered")
            try:
                if httpx.get(f"{self.url}/v1/health", timeout=2).status_code == 200:
                    return self
            except httpx.TransportError:
                time.sleep(0.1)
        self.kill()
        raise AssertionError("the server did not come up")

    def signal(self, sig: signal.Signals) -> None:
        """Send ``sig`` to the server's whole process group."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)

    def kill(self) -> None:
        """SIGKILL, as a crash would, and reap it."""
        self.signal(signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait(10)

    def stop(self, timeout: float = 20) -> None:
        """SIGTERM, as an operator would; SIGKILL when it has not left within ``timeout``."""
        self.signal(signal.SIGTERM)
        if self.proc is not None:
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()

    def remove_containers(self) -> None:
        """Remove every container this server made (a killed server leaves its running jobs' behind,
        and nothing else would remove them: no later server starts on this data dir). A removal the
        server asked for before it was killed may still be under way in the engine: such a container
        is gone (404) or going (409) by itself."""
        instance = Settings(data_dir=self.data_dir).instance
        engine = docker.from_env()
        try:
            for c in engine.containers.list(all=True, sparse=True, filters={"label": f"{LABEL_INSTANCE}={instance}"}):
                try:
                    c.remove(force=True)
                except docker.errors.APIError as exc:
                    if exc.status_code not in (404, 409):
                        raise
        finally:
            engine.close()

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.kill()
        self.remove_containers()


@contextmanager
def serving(server: ServerProcess, timeout: float = 30) -> Iterator[httpx.Client]:
    """A client of ``server`` (started here unless it runs); afterwards the client is closed and the
    server killed, whatever happened."""
    if server.proc is None or server.proc.poll() is not None:
        server.start()
    http = httpx.Client(base_url=server.url, timeout=timeout)
    try:
        yield http
    finally:
        http.close()
        server.kill()
        server.remove_containers()
