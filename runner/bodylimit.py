"""Request bodies bounded before any route sees them (an ASGI middleware around the whole app).

FastAPI reads a JSON body whole and parses it on the event loop: a 400 MB body took the server from 89 to
1,334 MiB, and 29 MB of 2M keys froze every other request (``/v1/health`` included) for 4-12 s. So, for
every route but the upload (``PUT /v1/jobs/ID/input``, which streams a tarball to disk under its own
limits, runner.tarstage):

- a body over ``limit`` bytes is refused with 413 before it is read (by its Content-Length) or as soon as
  it passes the limit (a chunked one): never more than ``limit`` bytes are held;
- a JSON body is parsed once in a worker thread first, and refused with 400 when it nests deeper than
  ``MAX_DEPTH`` or holds more than ``MAX_NODES`` values: what reaches the route parses in milliseconds.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio

from kcoral.protocol.errors import error_body

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

#: bytes of a request body (a job's spec holds at most 64 KiB of argv and 64 KiB of environment)
BODY_LIMIT = 1 << 20
#: a JSON body's nesting depth and its values (objects, arrays, keys' values, items) at most
MAX_DEPTH = 32
MAX_NODES = 50_000
#: the routes whose bodies are streams with limits of their own
STREAMED = re.compile(r"^/v1/jobs/[^/]+/input$")


class BodyLimit:
    """The ASGI middleware (module docstring)."""

    def __init__(self, app: App, limit: int = BODY_LIMIT) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS") or STREAMED.match(scope["path"]):
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v for k, v in scope.get("headers", [])}
        declared = headers.get(b"content-length", b"").strip()
        if declared.isdigit() and int(declared) > self.limit:
            await _refuse(send, 413, "too_large", f"a request body of {int(declared)} bytes is over {self.limit}")
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > self.limit:
                await _refuse(send, 413, "too_large", f"a request body over {self.limit} bytes")
                return
            if not message.get("more_body"):
                break
        if b"json" in headers.get(b"content-type", b"") and body:
            problem = await anyio.to_thread.run_sync(json_problem, bytes(body))
            if problem:
                await _refuse(send, 400, "bad_request", f"invalid request: {problem}")
                return
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def json_problem(data: bytes) -> str:
    """What is wrong with a JSON body's size or shape ("" when nothing is; a body that is not JSON at all
    is the route's to refuse, in its own words)."""
    try:
        doc = json.loads(data)
    except RecursionError:
        return f"the JSON body nests deeper than {MAX_DEPTH} levels"
    except ValueError:
        return ""
    nodes, stack = 0, [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        nodes += 1
        if depth > MAX_DEPTH:
            return f"the JSON body nests deeper than {MAX_DEPTH} levels"
        if nodes > MAX_NODES:
            return f"the JSON body holds more than {MAX_NODES} values"
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)
    return ""


async def _refuse(send: Send, status: int, code: str, message: str) -> None:
    """THE error body (kcoral.protocol.errors.error_body), the connection closed after it: the rest of a
    body that was not read must not be taken for the next request."""
    body = error_body(code, message)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
