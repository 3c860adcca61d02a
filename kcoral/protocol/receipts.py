"""Signed receipts: what a receipt's signed statement is, its canonical bytes, a server's public keys,
and the check anyone can run (``kcoral verify``), offline with a key file or against GET /v1/keys.

The server (runner.receipts) signs each finished evaluation's receipt.json with an Ed25519 key of its
own (runner.receipt_keys). The signed statement is the receipt less its ``signature`` member, as
canonical JSON: keys sorted, no whitespace, UTF-8, numbers as Python's ``json`` writes them
(:func:`canonical`). The ``signature`` member holds the algorithm, the key's id and the signature in
base64. A key's id is the start of the sha256 of its 32 raw bytes (:func:`key_id`), so a verifier
works it out from the key itself and never trusts an id it is told. The server lists every public
key it has signed with (a rotated key's receipts still verify).

A valid signature proves that the holder of that key signed exactly this statement. It does not prove
that what the statement says is true (that the timing was honest, the GPU the one named): those are
the claims of the server that holds the key, worth what that server is worth (:data:`DOES_NOT_PROVE`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat, load_pem_public_key

from kcoral.protocol.typeddata import DataError, from_data

ALGORITHM = "ed25519"
#: the receipt's member that holds the signature (everything else is the signed statement)
SIGNATURE = "signature"
#: hex digits of a key's sha256 that name it
KEY_ID_DIGITS = 16
#: how the signed bytes are made from a receipt, for a verifier of one's own
CANONICAL = (
    "the receipt without its 'signature' member, as JSON with keys sorted, no whitespace, non-ASCII "
    "characters as themselves, encoded UTF-8 (Python: json.dumps(statement, sort_keys=True, "
    "separators=(',', ':'), ensure_ascii=False).encode())"
)
PROVES = "the holder of this key (the server named) signed exactly this statement: no byte of it has changed since"
DOES_NOT_PROVE = (
    "that what the statement says is true: that the timing was honest and the GPU, image and code the ones named "
    "are that server's claims, worth what that server is worth",
    "that the key is the server's you think: --remote asks the server at that URL (use https), and a --key file "
    "is as good as where you got it",
    "that there were no later evaluations of this submission: same_submission counts those known when it was signed",
)


class ReceiptError(ValueError):
    """A key or a receipt that cannot be read as one (not a verdict on a signature: :class:`Verification`)."""


@dataclass(kw_only=True)
class PublicKey:
    """One public key a server signs receipts with (GET /v1/keys)."""

    #: :func:`key_id` of the key (a verifier works it out itself)
    key_id: str
    algorithm: str = ALGORITHM
    #: the 32 raw bytes of the Ed25519 key, base64
    public_key: str
    #: when the server first held it (Unix seconds; 0 where unknown)
    created: float = 0.0
    #: the key the server signs with now
    current: bool = False


@dataclass(kw_only=True)
class ServerKeys:
    """GET /v1/keys: the server's id in its receipts and every public key it has signed them with."""

    server: str
    keys: list[PublicKey] = field(default_factory=list)
    #: how a receipt's signed bytes are made (:data:`CANONICAL`)
    canonical: str = CANONICAL


@dataclass(kw_only=True)
class Verification:
    """What checking one receipt found: valid or not, and why, in one line."""

    valid: bool
    reason: str
    #: the key the receipt says it was signed with ("" when it says none)
    key_id: str = ""
    #: the signed statement (the receipt less its signature); {} when the receipt could not be read
    statement: dict[str, Any] = field(default_factory=dict)


def canonical(statement: Any) -> bytes:
    """The bytes that are signed (:data:`CANONICAL`); ValueError for what JSON cannot hold exactly (NaN,
    infinities, a lone surrogate)."""
    try:
        text = json.dumps(statement, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        return text.encode("utf-8")
    except (TypeError, UnicodeEncodeError) as exc:
        raise ValueError(f"not canonical JSON: {exc}") from None


def key_id(raw: bytes) -> str:
    """A key's id: the first KEY_ID_DIGITS hex digits of the sha256 of its raw bytes."""
    return hashlib.sha256(raw).hexdigest()[:KEY_ID_DIGITS]


def public_key(raw: bytes, created: float = 0.0, current: bool = False) -> PublicKey:
    """The listing of an Ed25519 public key given as its 32 raw bytes."""
    return PublicKey(key_id=key_id(raw), public_key=base64.b64encode(raw).decode(), created=created, current=current)


def read_keys(data: bytes) -> list[PublicKey]:
    """The public keys in a key file: GET /v1/keys's JSON (saved), a PEM public key (SubjectPublicKeyInfo,
    as ``openssl pkey -pubout`` writes it), or the 32 raw bytes in base64; ReceiptError otherwise.
    Key ids are worked out from the keys, whatever the file says."""
    text = data.strip()
    if text.startswith(b"{"):
        try:
            listed = from_data(ServerKeys, _loads(text))
        except (DataError, ReceiptError) as exc:
            raise ReceiptError(f"not a key list as GET /v1/keys answers: {exc}") from None
        keys = [public_key(_raw(k.public_key), k.created, k.current) for k in listed.keys if k.algorithm == ALGORITHM]
        if not keys:
            raise ReceiptError("the key list holds no Ed25519 key")
        return keys
    if text.startswith(b"-----BEGIN"):
        try:
            key = load_pem_public_key(text)
        except ValueError as exc:
            raise ReceiptError(f"not a PEM public key: {exc}") from None
        if not isinstance(key, Ed25519PublicKey):
            raise ReceiptError(f"not an Ed25519 key: a {type(key).__name__.removeprefix('_')}")
        return [public_key(key.public_bytes(Encoding.Raw, PublicFormat.Raw))]
    try:
        return [public_key(_raw(text.decode("ascii")))]
    except (UnicodeDecodeError, ReceiptError):
        raise ReceiptError(
            "not a public key: give GET /v1/keys's JSON, a PEM public key, or the key's 32 bytes in base64"
        ) from None


def _raw(b64: str) -> bytes:
    return _decoded(b64, 32, "a public key that is not base64", "an Ed25519 public key")


def _decoded(b64: str, size: int, not_base64: str, sized: str) -> bytes:
    """``b64``'s bytes, which must be ``size`` of them; ReceiptError ``not_base64``, or naming ``sized``
    with the wrong length, otherwise."""
    try:
        raw = base64.b64decode(b64, validate=True)
    except (binascii.Error, ValueError):
        raise ReceiptError(not_base64) from None
    if len(raw) != size:
        raise ReceiptError(f"{sized} is {size} bytes, not {len(raw)}")
    return raw


def _loads(data: bytes | str) -> Any:
    """JSON as a verifier must read it: a key given twice in one object, NaN or an infinity refused
    (readers disagree on them, so the bytes signed could be read two ways)."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(items)
        if len(obj) != len(items):
            raise ReceiptError("a key appears twice in one object")
        return obj

    def constant(name: str) -> Any:
        raise ReceiptError(f"{name} is not a JSON number")

    try:
        return json.loads(data, object_pairs_hook=pairs, parse_constant=constant)
    except (ValueError, RecursionError) as exc:
        if isinstance(exc, ReceiptError):
            raise
        raise ReceiptError(f"not JSON: {exc}") from None


def statement_of(receipt: dict[str, Any]) -> dict[str, Any]:
    """What is signed of a receipt: all of it but its signature."""
    return {k: v for k, v in receipt.items() if k != SIGNATURE}


def verify(data: bytes | str, keys: Iterable[PublicKey]) -> Verification:
    """Whether the receipt ``data`` (receipt.json's bytes) is signed by one of ``keys``, over exactly
    its statement; the reason in one line either way."""
    try:
        receipt = _loads(data)
    except ReceiptError as exc:
        return Verification(valid=False, reason=f"not a receipt: {exc}")
    if not isinstance(receipt, dict):
        return Verification(valid=False, reason="not a receipt: not a JSON object")
    statement = statement_of(receipt)
    signature = receipt.get(SIGNATURE)
    if signature is None:
        why = "not signed: the receipt has no signature (a server from before receipts were signed made it)"
        return Verification(valid=False, reason=why, statement=statement)
    try:
        kid, value = _signature(signature)
        message = canonical(statement)
    except (ReceiptError, ValueError) as exc:
        return Verification(valid=False, reason=f"malformed: {exc}", statement=statement)
    known = {k.key_id: k for k in keys}
    key = known.get(kid)
    if key is None:
        given = ", ".join(sorted(known)) or "none"
        why = f"signed with key {kid}, which is not among the keys given ({given}): another server's key"
        return Verification(valid=False, reason=why, key_id=kid, statement=statement)
    try:
        Ed25519PublicKey.from_public_bytes(base64.b64decode(key.public_key)).verify(value, message)
    except InvalidSignature:
        why = f"the signature does not match the statement: the receipt was changed after key {kid} signed it"
        return Verification(valid=False, reason=why, key_id=kid, statement=statement)
    server = statement.get("server")
    by = f" of server {server}" if isinstance(server, str) and server else ""
    return Verification(valid=True, reason=f"signed by key {kid}{by}", key_id=kid, statement=statement)


def _signature(member: object) -> tuple[str, bytes]:
    """The key id and the signature's bytes of a receipt's ``signature`` member."""
    if not isinstance(member, dict):
        raise ReceiptError("the signature is not an object")
    if member.get("algorithm") != ALGORITHM:
        raise ReceiptError(f"the signature's algorithm is {member.get('algorithm')!r}, not {ALGORITHM!r}")
    kid, value = member.get("key_id"), member.get("value")
    if not isinstance(kid, str) or not isinstance(value, str):
        raise ReceiptError("the signature needs a key_id and a value (text)")
    return kid, _decoded(value, 64, "the signature's value is not base64", "an Ed25519 signature")


def signature_member(kid: str, value: bytes) -> dict[str, str]:
    """A receipt's ``signature`` member (the server's, runner.receipts)."""
    return {"algorithm": ALGORITHM, "key_id": kid, "value": base64.b64encode(value).decode()}
