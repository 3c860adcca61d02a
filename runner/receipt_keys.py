"""The server's receipt-signing keys (Ed25519, the ``cryptography`` package), kept in the data dir:

    keys/                 0700
      signing.pem         0600  the current private key (PKCS#8 PEM), made at the first start
      server-id                 this server's id in its receipts, made at the first start
      public/KEYID.pem          each public key the server has signed with (SubjectPublicKeyInfo PEM),
                                kept for good: GET /v1/keys lists them all

Rotation: a new signing.pem becomes current at the next start (the operator's own Ed25519 key put
there, or none: the start makes one; :func:`rotate` makes one now). The public keys of the earlier
ones stay in public/, so the receipts they signed still verify. The private key is read by this
module alone and never served; jobs cannot reach the data dir's keys/ (they mount their own folders,
and run as other users than the server).

Errors (an unreadable key, a key of another kind) are InfrastructureErrors: the server does not start.
"""

from __future__ import annotations

import logging
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
    load_pem_private_key,
    load_pem_public_key,
)

from kcoral.protocol.errors import InfrastructureError
from kcoral.protocol.receipts import PublicKey, ServerKeys, canonical, key_id, public_key, signature_member
from kcoral.runner.errors import disk_writes

log = logging.getLogger("kcoral.keys")

FOLDER = "keys"
SIGNING_KEY = "signing.pem"
SERVER_ID = "server-id"
PUBLIC = "public"


def keys_dir(data_dir: Path) -> Path:
    """Where a data dir's receipt keys are."""
    return data_dir / FOLDER


@dataclass(frozen=True)
class KeyRing:
    """The key a server signs receipts with now, and every public key it has signed with."""

    folder: Path
    #: this server's id in its receipts
    server: str
    _private: Ed25519PrivateKey
    current: PublicKey

    @classmethod
    def open(cls, folder: Path) -> KeyRing:
        """The key ring in ``folder``: its signing key (made when there is none), its public key kept
        among the public ones."""
        with disk_writes(f"cannot keep the receipt keys in {folder}"):
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(folder, 0o700)
            (folder / PUBLIC).mkdir(exist_ok=True)
            server = _server_id(folder / SERVER_ID)
            path = folder / SIGNING_KEY
            if not path.exists():
                _write_private(path, Ed25519PrivateKey.generate())
                log.info("made a receipt signing key in %s", path)
            private = _read_private(path)
            raw = private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
            pem = folder / PUBLIC / f"{key_id(raw)}.pem"
            if not pem.exists():
                _write(pem, private.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo), 0o644)
        return cls(folder, server, private, public_key(raw, pem.stat().st_mtime, current=True))

    def sign(self, statement: dict[str, Any]) -> dict[str, str]:
        """The ``signature`` member for ``statement`` (kcoral.protocol.receipts: its canonical JSON,
        signed); ValueError for a statement JSON cannot hold exactly."""
        return signature_member(self.current.key_id, self._private.sign(canonical(statement)))

    def public(self) -> ServerKeys:
        """Every public key this server has signed with, the current one first, then newest first."""
        others: list[PublicKey] = []
        for pem in (self.folder / PUBLIC).glob("*.pem"):
            listed = _read_public(pem)
            if listed is not None and listed.key_id != self.current.key_id:
                others.append(listed)
        others.sort(key=lambda k: (-k.created, k.key_id))
        return ServerKeys(server=self.server, keys=[self.current, *others])

    def describe(self) -> dict[str, object]:
        """What /v1/health says of the receipts' signing (kcoral doctor shows it)."""
        return {
            "server": self.server,
            "algorithm": self.current.algorithm,
            "key_id": self.current.key_id,
            "public_key": self.current.public_key,
            "keys": len(self.public().keys),
        }


def rotate(folder: Path) -> None:
    """A new signing key in ``folder``, current from the next :meth:`KeyRing.open` on; the public keys
    kept there stay (the old key's own, once a ring has opened it, among them)."""
    with disk_writes(f"cannot keep the receipt keys in {folder}"):
        _write_private(folder / SIGNING_KEY, Ed25519PrivateKey.generate())


def _server_id(path: Path) -> str:
    try:
        server = path.read_text().strip()
    except FileNotFoundError:
        server = ""
    if not server:
        server = f"kcoral-{secrets.token_hex(8)}"
        _write(path, f"{server}\n".encode(), 0o644)
    return server


def _write_private(path: Path, key: Ed25519PrivateKey) -> None:
    _write(path, key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()), 0o600)


def _write(path: Path, data: bytes, mode: int) -> None:
    """``data`` as ``path``, made whole under another name first (created with ``mode``), then renamed."""
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.unlink(missing_ok=True)
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def _read_private(path: Path) -> Ed25519PrivateKey:
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        log.warning("the receipt signing key %s was readable by others (mode %o): now 0600", path, mode)
        os.chmod(path, 0o600)
    try:
        key = load_pem_private_key(path.read_bytes(), password=None)
    except (ValueError, TypeError) as exc:
        raise InfrastructureError(f"the receipt signing key {path} cannot be read: {exc}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise InfrastructureError(f"the receipt signing key {path} is not an Ed25519 key")
    return key


def _read_public(path: Path) -> PublicKey | None:
    """A kept public key; None (logged) for a file that is not one."""
    try:
        key = load_pem_public_key(path.read_bytes())
        if not isinstance(key, Ed25519PublicKey):
            raise ValueError(f"a {type(key).__name__.removeprefix('_')}, not an Ed25519 key")
        return public_key(key.public_bytes(Encoding.Raw, PublicFormat.Raw), path.stat().st_mtime)
    except (OSError, ValueError, TypeError) as exc:
        log.warning("%s is not a public key of receipts: %s", path, exc)
        return None
