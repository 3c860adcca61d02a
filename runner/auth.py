"""Bearer tokens from a file. Without a tokens file every request is the owner ``local``, and the
server refuses to listen anywhere but loopback (see runner.serve_command).

File format: one token per line, ``NAME TOKEN`` or just ``TOKEN`` (then the name is derived), or
``NAME TOKEN operator`` for an operator (the web page shows an operator every token's jobs); blank
lines and ``#`` comments are ignored.
"""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

from kcoral.protocol.errors import BadRequest, Unauthorized

LOCAL_OWNER = "local"
#: owner names of the server's own jobs (runner.warmup) start with this; no token may have one
RESERVED_PREFIX = "kcoral:"


OPERATOR = "operator"


def load_tokens(path: Path) -> dict[str, str]:
    """token -> owner name."""
    return {token: name for token, name, _ in _entries(path)}


def load_operators(path: Path) -> frozenset[str]:
    """The owner names marked ``operator``."""
    return frozenset(name for _, name, operator in _entries(path) if operator)


def _entries(path: Path) -> list[tuple[str, str, bool]]:
    """(token, name, operator) per line."""
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise BadRequest(f"cannot read tokens file {path}: {exc.strerror}") from None
    entries: dict[str, tuple[str, bool]] = {}
    for number, line in enumerate(lines, 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        operator = len(words) == 3 and words[2] == OPERATOR
        if operator:
            words = words[:2]
        if len(words) > 2:
            raise BadRequest(f"{path}:{number}: expected 'NAME TOKEN', 'TOKEN' or 'NAME TOKEN operator'")
        token = words[-1]
        if len(token) < 16:
            raise BadRequest(f"{path}:{number}: tokens must be at least 16 characters")
        name = words[0] if len(words) == 2 else "t-" + hashlib.sha256(token.encode()).hexdigest()[:8]
        if name.startswith(RESERVED_PREFIX):
            raise BadRequest(f"{path}:{number}: names starting {RESERVED_PREFIX!r} are the server's own")
        entries[token] = (name, operator)
    if not entries:
        raise BadRequest(f"tokens file {path} holds no token")
    return [(token, name, operator) for token, (name, operator) in entries.items()]


class Authenticator:
    def __init__(self, tokens: dict[str, str] | None, operators: frozenset[str] = frozenset()) -> None:
        self.tokens = tokens
        self.operators = operators

    def is_operator(self, owner: str) -> bool:
        """Whether ``owner`` sees every token's jobs on the web page (everyone, without a tokens file)."""
        return self.tokens is None or owner in self.operators

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
