"""An in-memory stand-in for the kcoral server API, served through httpx.MockTransport (no sockets)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import httpx


@dataclass
class FakeServer:
    log: bytes = b"hello from the job\n"
    verdict: str = "ok"
    exit_code: int = 0
    outputs: dict[str, bytes] = field(default_factory=dict)
    initial_positions: tuple[int, ...] = (2, 2, 1)
    queue_positions: list[int] = field(default_factory=list)
    token: str | None = None
    interrupt_on_log: bool = False
    requests: list[tuple[str, str]] = field(default_factory=list)
    spec: dict[str, Any] = field(default_factory=dict)
    uploaded: bytes = b""
    state: str = "created"
    cancelled: bool = False

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    def view(self) -> dict[str, Any]:
        v: dict[str, Any] = {
            "id": "job123", "owner": "me", "state": self.state, "spec": self.spec or {"argv": ["x"]},
            "times": {"created": 100.0}, "log_bytes": len(self.log),
        }  # fmt: skip
        if self.state == "queued":
            v["queue_position"] = self.queue_positions[0]
        if self.state == "finished":
            v |= {
                "verdict": "cancelled" if self.cancelled else self.verdict,
                "exit_code": self.exit_code,
                "times": {"created": 100.0, "queued": 101.0, "started": 102.0, "finished": 104.5},
                "image": {"ref": "kcoral-job:cpu", "digest": "sha256:" + "ab" * 32},
                "outputs": [
                    {"path": p, "size": len(d), "sha256": hashlib.sha256(d).hexdigest()}
                    for p, d in self.outputs.items()
                ],
            }
        return v

    def handle(self, request: httpx.Request) -> httpx.Response:
        method, path = request.method, request.url.path
        self.requests.append((method, path))
        if self.token and request.headers.get("authorization") != f"Bearer {self.token}":
            return httpx.Response(401, json={"error": "unauthorized", "message": "unknown token"})
        if (method, path) == ("GET", "/v1/health"):
            return httpx.Response(200, json={"docker": {"ok": True}, "gpus": [{"index": 0, "name": "H200"}]})
        if (method, path) == ("POST", "/v1/jobs"):
            self.spec = json.loads(request.read())
            self.state, self.cancelled = "created", False
            self.queue_positions = list(self.initial_positions)
            return httpx.Response(201, json=self.view())
        if (method, path) == ("GET", "/v1/jobs"):
            return httpx.Response(200, json=[self.view()])
        if path == "/v1/jobs/job123/input":
            self.uploaded = request.read()
            self.state = "queued"
            return httpx.Response(200, json=self.view())
        if (method, path) == ("GET", "/v1/jobs/job123"):
            if self.state == "queued":
                self.queue_positions.pop(0)
                if not self.queue_positions:
                    self.state = "running"
            elif self.state == "running":
                self.state = "finished"
            return httpx.Response(200, json=self.view())
        if path == "/v1/jobs/job123/log":
            if self.interrupt_on_log:
                raise KeyboardInterrupt
            self.state = "finished"
            offset = int(request.url.params.get("offset", "0"))
            return httpx.Response(200, content=self.log[offset:])
        if path == "/v1/jobs/job123/cancel":
            self.cancelled = True
            self.state = "finished"
            return httpx.Response(200, json=self.view())
        if path.startswith("/v1/jobs/job123/outputs/"):
            return httpx.Response(200, content=self.outputs[path.removeprefix("/v1/jobs/job123/outputs/")])
        return httpx.Response(404, json={"error": "not_found", "message": f"no route {method} {path}"})
