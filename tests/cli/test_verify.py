"""``kcoral verify`` in-process (cli.main.run): exit 0 for a valid receipt with what it proves and what it
does not, 1 with a one-line reason for a changed or foreign one, 2 for usage errors (never a traceback),
69 for a server that does not answer; against a key file, and against a real server's GET /v1/keys
(uvicorn in a thread, serving the keys route alone)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
import uvicorn
from fastapi import FastAPI

from kcoral.cli.main import run
from kcoral.protocol.typeddata import to_data
from kcoral.runner.keys_api import router
from kcoral.runner.receipt_keys import PUBLIC, KeyRing
from tests.serverproc import free_port
from tests.test_protocol_receipts import STATEMENT, signed


@pytest.fixture
def ring(tmp_path: Path) -> KeyRing:
    return KeyRing.open(tmp_path / "server" / "keys")


@pytest.fixture
def files(tmp_path: Path, ring: KeyRing) -> SimpleNamespace:
    receipt = tmp_path / "receipt.json"
    receipt.write_bytes(signed(ring))
    pem = tmp_path / "server.pem"
    pem.write_bytes((ring.folder / PUBLIC / f"{ring.current.key_id}.pem").read_bytes())
    listed = tmp_path / "keys.json"
    listed.write_text(json.dumps(to_data(ring.public())))
    tampered = tmp_path / "tampered.json"
    tampered.write_text(receipt.read_text().replace('"speedup": 1.0123', '"speedup": 1.1123', 1))
    return SimpleNamespace(receipt=str(receipt), pem=str(pem), listed=str(listed), tampered=str(tampered))


def test_a_valid_receipt_exits_0_and_says_what_it_proves_and_what_not(
    files: SimpleNamespace, ring: KeyRing, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["verify", files.receipt, "--key", files.pem]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"valid: signed by key {ring.current.key_id} of server {STATEMENT['server']}"
    assert any(
        "score 1.0123x [0.9980, 1.0300]" in line and "NVIDIA H200 GPU-1234 (driver 570.1)" in line for line in out
    )
    assert any("when it was signed: 2" in line for line in out)
    assert [line for line in out if line.startswith("proves: ")] == [
        "proves: the holder of this key (the server named) signed exactly this statement: no byte of it has changed "
        "since"
    ]
    assert any(line.startswith("does not prove: that what the statement says is true") for line in out)
    assert run(["verify", files.receipt, "--key", files.listed]) == 0  # /v1/keys's answer, saved
    capsys.readouterr()


def test_a_checks_receipt_says_it_was_a_check_beside_its_verdict(
    tmp_path: Path, ring: KeyRing, capsys: pytest.CaptureFixture[str]
) -> None:
    """`kcoral eval --check` signs a receipt too: its "verdict ok" is a check's, and verify says so."""
    receipt = tmp_path / "check.json"
    receipt.write_bytes(signed(ring, {**STATEMENT, "check": True, "score": None}))
    pem = tmp_path / "server.pem"
    pem.write_bytes((ring.folder / PUBLIC / f"{ring.current.key_id}.pem").read_bytes())
    assert run(["verify", str(receipt), "--key", str(pem)]) == 0
    out = capsys.readouterr().out
    assert "verdict ok (a check: correctness of the public workloads only, no holdout, no timing), score -" in out


def test_a_changed_or_foreign_receipt_exits_1_with_one_line(
    tmp_path: Path, files: SimpleNamespace, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["verify", files.tampered, "--key", files.pem]) == 1
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("invalid: the signature does not match the statement")
    other = KeyRing.open(tmp_path / "other" / "keys")
    foreign = tmp_path / "foreign.json"
    foreign.write_bytes(signed(other))
    assert run(["verify", str(foreign), "--key", files.pem]) == 1
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and f"signed with key {other.current.key_id}, which is not among" in out
    unsigned = tmp_path / "unsigned.json"
    unsigned.write_text(json.dumps(STATEMENT))
    assert run(["verify", str(unsigned), "--key", files.pem]) == 1
    assert capsys.readouterr().out.startswith("invalid: not signed")


def test_json_says_valid_or_not_with_the_exit_code(files: SimpleNamespace, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["verify", files.receipt, "--key", files.pem, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["valid"] is True and doc["exit_code"] == 0 and doc["statement"]["score"] == STATEMENT["score"]
    assert doc["statement"]["same_submission"]["count"] == 2 and doc["proves"] and len(doc["does_not_prove"]) == 3
    assert run(["verify", files.tampered, "--key", files.pem, "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["valid"] is False and doc["exit_code"] == 1 and "statement" not in doc
    assert doc["reason"].startswith("the signature does not match")


def test_usage_errors_exit_2_without_a_traceback(
    tmp_path: Path, files: SimpleNamespace, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KCORAL_REMOTE", raising=False)
    not_a_key = tmp_path / "not-a-key"
    not_a_key.write_text("hello")
    cases = [
        (["verify", files.receipt], "nothing to check against: give --key FILE"),
        (["verify", files.receipt, "--key", files.pem, "--remote", "http://127.0.0.1:9"], "not both"),
        (["verify", str(tmp_path / "absent.json"), "--key", files.pem], "the receipt: cannot read"),
        (["verify", files.receipt, "--key", str(tmp_path / "absent.pem")], "--key: cannot read"),
        (["verify", files.receipt, "--key", str(not_a_key)], f"--key {not_a_key}: not a public key"),
        (["verify"], "Missing argument"),
    ]
    for argv, said in cases:
        assert run(argv) == 2, argv
        err = capsys.readouterr().err
        assert said in err and "Traceback" not in err, (argv, err)
    assert run(["verify", files.receipt, "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["exit_code"] == 2


def test_key_wins_over_a_remote_from_the_environment(
    files: SimpleNamespace, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KCORAL_REMOTE", "http://127.0.0.1:9")
    assert run(["verify", files.receipt, "--key", files.pem]) == 0
    capsys.readouterr()
    assert run(["verify", files.receipt]) == 69  # nothing there: the server does not answer
    assert "cannot reach" in capsys.readouterr().err


@pytest.fixture
def keys_server(ring: KeyRing) -> Iterator[str]:
    """A real HTTP server answering GET /v1/keys from ``ring`` (runner.keys_api's route)."""
    app = FastAPI()
    app.state.services = SimpleNamespace(keys=ring)
    app.include_router(router)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the keys server did not start"
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def test_remote_checks_against_the_servers_keys(
    keys_server: str, files: SimpleNamespace, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["verify", files.receipt, "--remote", keys_server]) == 0
    assert capsys.readouterr().out.startswith("valid: ")
    assert run(["verify", files.tampered, "--remote", keys_server]) == 1
    assert capsys.readouterr().out.startswith("invalid: the signature does not match")


def test_doctor_shows_the_key_that_signs_receipts(ring: KeyRing) -> None:
    from kcoral.cli.commands.doctor import _receipts

    check = _receipts(ring.describe())
    assert check.status == "ok" and ring.current.key_id in check.detail and ring.current.public_key in check.detail
    assert ring.server in check.detail and "1 key(s) at GET /v1/keys" in check.detail
    assert _receipts(None).status == "warn"  # a server from before receipts were signed
