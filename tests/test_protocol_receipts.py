"""Signed receipts (kcoral.protocol.receipts, signed by runner.receipt_keys): a changed byte anywhere in
the statement fails, another server's key fails, a rotated key's receipts still verify with its public
key, and key files of every accepted form read. Real Ed25519 keys in tmp dirs; no server."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from kcoral.protocol.receipts import (
    SIGNATURE,
    ReceiptError,
    canonical,
    key_id,
    read_keys,
    signature_member,
    statement_of,
    verify,
)
from kcoral.protocol.typeddata import to_data
from kcoral.runner.receipt_keys import KeyRing

STATEMENT: dict[str, Any] = {
    "job": "20250101-000000-abcdefghij",
    "task": "demo/softmax",
    "task_version": "1",
    "task_sha256": "a" * 64,
    "manifest_sha256": "b" * 64,
    "image": "sha256:" + "c" * 64,
    "submission_digest": "d" * 64,
    "judge_code_sha256": "e" * 64,
    "gpus": [{"index": 0, "uuid": "GPU-1234", "name": "NVIDIA H200", "driver": "570.1", "memory_total_mib": 143771}],
    "verdict": "ok",
    "score": {"speedup": 1.0123, "speedup_lo": 0.998, "speedup_hi": 1.03},
    "workloads": {"w1": {"verdict": "PASS", "speedup": 1.0123, "speedup_lo": 0.998, "speedup_hi": 1.03}},
    "times": {"created": 1700000000.25, "started": 1700000001.5, "finished": 1700000042.0},
    "server": "kcoral-0011223344556677",
    "label": "softmax_v2-ddddddddé",  # non-ASCII: canonical JSON keeps it as UTF-8
    "same_submission": {"count": 2, "evaluations": [{"job": "x", "state": "finished", "verdict": "ok"}]},
}


def signed(ring: KeyRing, statement: dict[str, Any] | None = None) -> bytes:
    """receipt.json as the server writes it: the statement and its signature, indented."""
    body = dict(STATEMENT if statement is None else statement)
    return json.dumps({**body, SIGNATURE: ring.sign(body)}, indent=1).encode()


def ring(tmp_path: Path, name: str = "a") -> KeyRing:
    return KeyRing.open(tmp_path / name / "keys")


def test_a_signed_receipt_verifies_and_canonical_json_is_sorted_compact_utf8(tmp_path: Path) -> None:
    keys = ring(tmp_path)
    found = verify(signed(keys), keys.public().keys)
    assert found.valid and found.key_id == keys.current.key_id
    assert found.reason == f"signed by key {keys.current.key_id} of server {STATEMENT['server']}"
    assert found.statement == STATEMENT
    assert canonical({"b": [1, 2.5], "a": "é"}) == '{"a":"é","b":[1,2.5]}'.encode()
    with pytest.raises(ValueError):
        canonical({"x": float("nan")})


def test_a_changed_byte_anywhere_in_the_statement_fails(tmp_path: Path) -> None:
    keys = ring(tmp_path)
    signature = keys.sign(STATEMENT)
    message = canonical(STATEMENT)
    verdicts = set()
    for i in range(len(message)):
        changed = bytearray(message)
        changed[i] ^= 0x01
        try:
            statement = json.loads(bytes(changed))
        except ValueError:  # no longer JSON (or UTF-8): a receipt of it cannot even be read
            statement = None
        if isinstance(statement, dict):
            receipt = json.dumps({**statement, SIGNATURE: signature}, ensure_ascii=False).encode()
        else:
            receipt = bytes(changed)
        found = verify(receipt, keys.public().keys)
        assert not found.valid, (i, bytes(changed))
        verdicts.add(found.reason.split(":")[0])
    assert "the signature does not match the statement" in verdicts  # the changes that still parse
    # and in the file as written: a digit of the score
    text = signed(keys).decode()
    assert verify(text.replace("1.0123", "1.0124", 1), keys.public().keys).reason.startswith("the signature does not")


def test_whitespace_and_key_order_of_the_file_do_not_matter(tmp_path: Path) -> None:
    keys = ring(tmp_path)
    doc = json.loads(signed(keys))
    reordered = json.dumps(dict(reversed(list(doc.items()))), separators=(", ", " : "))
    assert verify(reordered, keys.public().keys).valid


def test_a_receipt_signed_by_another_servers_key_fails(tmp_path: Path) -> None:
    ours, theirs = ring(tmp_path, "ours"), ring(tmp_path, "theirs")
    assert ours.current.key_id != theirs.current.key_id and ours.server != theirs.server
    found = verify(signed(theirs), ours.public().keys)
    assert not found.valid and found.key_id == theirs.current.key_id
    assert found.reason == (
        f"signed with key {theirs.current.key_id}, which is not among the keys given ({ours.current.key_id}): "
        "another server's key"
    )
    # their signature passed off as ours (our key's id in it): the signature does not match
    forged = json.loads(signed(theirs))
    forged[SIGNATURE]["key_id"] = ours.current.key_id
    found = verify(json.dumps(forged), ours.public().keys)
    assert not found.valid and found.reason.startswith("the signature does not match the statement")


def test_key_files_as_v1_keys_json_pem_or_base64_and_ids_worked_out_not_trusted(tmp_path: Path) -> None:
    keys = ring(tmp_path)
    receipt = signed(keys)
    listed = to_data(keys.public())
    raw = base64.b64decode(keys.current.public_key)
    pem = Ed25519PrivateKey.generate().public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    assert verify(receipt, read_keys(json.dumps(listed).encode())).valid
    assert verify(receipt, read_keys(keys.current.public_key.encode() + b"\n")).valid
    assert read_keys(pem)[0].key_id != keys.current.key_id
    lying = {**listed, "keys": [{**listed["keys"][0], "key_id": "0" * 16, "public_key": base64.b64encode(b"x" * 32)}]}
    lying["keys"][0]["public_key"] = lying["keys"][0]["public_key"].decode()
    assert read_keys(json.dumps(lying).encode())[0].key_id == key_id(b"x" * 32)
    assert key_id(raw) == keys.current.key_id
    for bad, said in [
        (b"hello", "not a public key"),
        (base64.b64encode(b"short"), "not a public key"),
        (b'{"server": "x", "keys": []}', "holds no Ed25519 key"),
        (b'{"keys": 3}', "not a key list"),
        (b"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n", "not a PEM public key"),
    ]:
        with pytest.raises(ReceiptError, match=said):
            read_keys(bad)


def sig(algorithm: str = "ed25519", value: str = "") -> bytes:
    return json.dumps({"job": "x", "signature": {"algorithm": algorithm, "key_id": "k", "value": value}}).encode()


@pytest.mark.parametrize(
    ("receipt", "said"),
    [
        (b"[1, 2]", "not a receipt: not a JSON object"),
        (b"{not json", "not a receipt: not JSON"),
        (b'{"job": "x"}', "not signed: the receipt has no signature"),
        (b'{"job": "x", "signature": "abc"}', "malformed: the signature is not an object"),
        (sig("rsa"), "malformed: the signature's algorithm"),
        (sig(value="!!"), "malformed: the signature's value is not base64"),
        (sig(value="AAAA"), "malformed: an Ed25519 signature is 64 bytes"),
        (b'{"job": "x", "job": "y", "signature": {}}', "not a receipt: a key appears twice in one object"),
        (b'{"speedup": NaN, "signature": {}}', "not a receipt: NaN is not a JSON number"),
    ],
)
def test_what_is_not_a_signed_receipt_is_invalid_with_its_reason(tmp_path: Path, receipt: bytes, said: str) -> None:
    found = verify(receipt, ring(tmp_path).public().keys)
    assert not found.valid and found.reason.startswith(said), found.reason


def test_the_statement_is_the_receipt_without_its_signature() -> None:
    member = signature_member("k" * 16, b"\0" * 64)
    assert statement_of({**STATEMENT, SIGNATURE: member}) == STATEMENT
    assert member == {"algorithm": "ed25519", "key_id": "k" * 16, "value": base64.b64encode(b"\0" * 64).decode()}
