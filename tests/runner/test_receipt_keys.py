"""The server's receipt keys (runner.receipt_keys): the signing key made 0600 in a 0700 folder and reused
at a restart, an operator's own key taken, a key of another kind refused, and rotation: a new key
current, the old public key kept, so the receipts it signed still verify. Real keys in tmp dirs."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from kcoral.protocol.receipts import key_id, read_keys, verify
from kcoral.runner.receipt_keys import PUBLIC, SERVER_ID, SIGNING_KEY, KeyRing, rotate
from tests.test_protocol_receipts import signed


def test_rotation_keeps_old_receipts_verifiable_with_the_old_public_key(tmp_path: Path) -> None:
    folder = tmp_path / "keys"
    first = KeyRing.open(folder)
    old = signed(first)
    rotate(folder)
    second = KeyRing.open(folder)
    new = signed(second)
    assert second.current.key_id != first.current.key_id and second.server == first.server
    listed = second.public()
    assert [k.key_id for k in listed.keys] == [second.current.key_id, first.current.key_id]
    assert [k.current for k in listed.keys] == [True, False]
    assert verify(old, listed.keys).valid and verify(new, listed.keys).valid
    # the old public key alone (a key file kept from before the rotation) still verifies the old receipt
    old_pem = (folder / PUBLIC / f"{first.current.key_id}.pem").read_bytes()
    assert verify(old, read_keys(old_pem)).valid
    assert not verify(new, read_keys(old_pem)).valid
    assert not verify(old, [second.current]).valid  # and the new key alone does not


def test_the_signing_key_is_made_0600_in_a_0700_folder_and_reused_on_restart(tmp_path: Path) -> None:
    folder = tmp_path / "data" / "keys"
    first = KeyRing.open(folder)
    assert stat.S_IMODE((folder / SIGNING_KEY).stat().st_mode) == 0o600
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    key_bytes = (folder / SIGNING_KEY).read_bytes()
    again = KeyRing.open(folder)
    assert (folder / SIGNING_KEY).read_bytes() == key_bytes
    assert again.current.key_id == first.current.key_id and again.server == first.server
    assert (folder / SERVER_ID).read_text().strip() == first.server
    assert verify(signed(first), again.public().keys).valid
    assert sorted(p.name for p in folder.iterdir()) == [PUBLIC, SERVER_ID, SIGNING_KEY]  # no partial file left
    # a key file others could read is made private again at the start
    os.chmod(folder / SIGNING_KEY, 0o644)
    KeyRing.open(folder)
    assert stat.S_IMODE((folder / SIGNING_KEY).stat().st_mode) == 0o600


def test_an_operators_own_key_put_there_becomes_current(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives.serialization import NoEncryption, PrivateFormat

    folder = tmp_path / "keys"
    first = KeyRing.open(folder)
    mine = Ed25519PrivateKey.generate()
    (folder / SIGNING_KEY).write_bytes(mine.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    ring2 = KeyRing.open(folder)
    assert ring2.current.key_id == key_id(mine.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw))
    assert {k.key_id for k in ring2.public().keys} == {first.current.key_id, ring2.current.key_id}


def test_a_key_of_another_kind_stops_the_start(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives.asymmetric.ec import SECP256R1, generate_private_key
    from cryptography.hazmat.primitives.serialization import NoEncryption, PrivateFormat

    from kcoral.protocol.errors import InfrastructureError

    folder = tmp_path / "keys"
    folder.mkdir()
    ec = generate_private_key(SECP256R1())
    (folder / SIGNING_KEY).write_bytes(ec.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    with pytest.raises(InfrastructureError, match="not an Ed25519 key"):
        KeyRing.open(folder)
    (folder / SIGNING_KEY).write_text("not a key")
    with pytest.raises(InfrastructureError, match="cannot be read"):
        KeyRing.open(folder)
