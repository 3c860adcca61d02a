"""Bearer tokens from a file. Without a tokens file every request is the owner ``local``, and the
server refuses to listen anywhere but loopback (see runner.serve_command).

File format: one token per line, ``NAME TOKEN`` or just ``TOKEN`` (then the name is derived);
blank lines and ``#`` comments are ignored.
"""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

from kcoral.runner.errors import BadRequest, Unauthorized

LOCAL_OWNER = "local"
#: owner names of the server's own jobs (runner.warmup) start with this; no token may have one
RESERVED_PREFIX = "kcoral:"


def load_tokens(path: Path) -> dict[str, str]:
    """token -> owner name."""
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise BadRequest(f"cannot read tokens file {path}: {exc.strerror}") from None
    tokens: dict[str, str] = {}
    for number, line in enumerate(lines, 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) > 2:
            raise BadRequest(f"{path}:{number}: expected 'NAME TOKEN' or 'TOKEN'")
        token = words[-1]
        if len(token) < 16:
            raise BadRequest(f"{path}:{number}: tokens must be at least 16 characters")
        name = words[0] if len(words) == 2 else "t-" + hashlib.sha256(token.encode()).hexdigest()[:8]
        if name.startswith(RESERVED_PREFIX):
            raise BadRequest(f"{path}:{number}: names starting {RESERVED_PREFIX!r} are the server's own")
        tokens[token] = name
    if not tokens:
        raise BadRequest(f"tokens file {path} holds no token")
    return tokens


class Authenticator:
    def __init__(self, tokens: dict[str, str] | None) -> None:
        self.tokens = tokens

    def owner(self, authorization: str | None) -> str:
        """The owner name for an Authorization header, or raise Unauthorized."""
        if self.tokens is None:
            return LOCAL_OWNER
        if not authorization or not authorization.startswith("Bearer "):
            raise Unauthorized("this server needs a bearer token: set KCORAL_TOKEN or pass --token")
        given = authorization.removeprefix("Bearer ").strip()
        for token, name in self.tokens.items():
            if hmac.compare_digest(token.encode(), given.encode()):
                return name
        raise Unauthorized("unknown token")
