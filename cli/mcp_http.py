"""``kcoral mcp --http``: the MCP tools over streamable HTTP on loopback, behind a secret of this start's.

The tools act with the kcoral token the command was started with, and a loopback port is open to every
local process (another user's too): without a credential of its own, any of them could use that token.
So each start makes a new secret (``secrets.token_urlsafe``), writes it to a file only this user can
read (``mcp-http-HOST-PORT.secret`` in :func:`kcoral.cli.paths.state_dir`, mode 0600), prints it once to
stderr, and answers every request that does not carry ``Authorization: Bearer SECRET`` with 401 (an
ASGI middleware around the MCP SDK's own streamable-HTTP app, compared with hmac.compare_digest). The
file is removed when the server stops; the next start has a new secret.
"""

from __future__ import annotations

import hmac
import os
import secrets
import signal
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from types import FrameType
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer

from kcoral.cli.paths import state_dir
from kcoral.protocol.errors import Unauthorized, error_body

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


class BearerSecret:
    """An ASGI middleware: an HTTP request without ``Authorization: Bearer <secret>`` gets 401 and never
    reaches ``app`` (the lifespan does: it starts the SDK's session manager)."""

    def __init__(self, app: App, secret: str, where: Path) -> None:
        self.app, self.expected, self.where = app, f"Bearer {secret}".encode(), where

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        said = [value for name, value in scope.get("headers", []) if name.lower() == b"authorization"]
        if scope["type"] == "http" and len(said) == 1 and hmac.compare_digest(said[0], self.expected):
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # a websocket, say: this server speaks none
            await send({"type": "websocket.close", "code": 1008})
            return
        body = error_body(
            Unauthorized.code,
            "kcoral mcp --http: every request must carry 'Authorization: Bearer SECRET', the "
            f"secret this start printed (also in {self.where}, readable by its user only)",
        )
        headers = [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]
        await send({"type": "http.response.start", "status": 401, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def secret_file(host: str, port: int) -> Path:
    """Where this start's secret goes (one file per address: two servers never share one)."""
    return state_dir() / f"mcp-http-{host.replace(':', '_')}-{port}.secret"


def write_secret(path: Path) -> str:
    """A new secret, written to ``path`` readable and writable by this user only (0600, not through a
    symlink): the secret."""
    secret = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)  # a file left by an earlier start keeps its mode otherwise
        os.write(fd, f"{secret}\n".encode())
    finally:
        os.close(fd)
    return secret


def serve(server: MCPServer, host: str, port: int) -> None:
    """Serve ``server``'s streamable-HTTP app on ``host``:``port`` behind a new secret, until stopped."""
    path = secret_file(host, port)
    secret = write_secret(path)
    shown = f"[{host}]" if ":" in host else host
    print(
        f"kcoral mcp: streamable HTTP on http://{shown}:{port}/mcp; every request must carry the header\n"
        f"  Authorization: Bearer {secret}\n"
        f"(this start's secret, also in {path}, readable by you only; the next start makes a new one)",
        file=sys.stderr,
        flush=True,
    )
    app = BearerSecret(server.streamable_http_app(host=host), secret, path)
    # uvicorn stops gracefully at SIGTERM, then raises it again under the handler it found: make that an
    # exit that runs the clean-up below rather than the default's death
    signal.signal(signal.SIGTERM, _exit)
    try:
        uvicorn.run(app, host=host, port=port, log_level=server.settings.log_level.lower())
    finally:
        path.unlink(missing_ok=True)


def _exit(sig: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + sig)
