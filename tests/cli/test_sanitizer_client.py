"""The sanitizer on the client's side: Client.sanitizer checks its options before anything is sent, and
kcoral doctor shows compute-sanitizer's presence and version."""

from __future__ import annotations

import pytest

from kcoral.cli.commands.doctor import _profilers
from kcoral.cli.library import Client
from kcoral.protocol.errors import UsageError


def test_client_refuses_options_before_sending() -> None:
    kc = Client("http://127.0.0.1:9")  # nothing listens: must not be reached
    with pytest.raises(UsageError, match="--save is not allowed"):
        kc.sanitizer(["python", "x.py"], ["--save", "x"])
    with pytest.raises(UsageError, match="applies to memcheck, not synccheck"):
        kc.sanitizer(["python", "x.py"], ["--tool", "synccheck", "--leak-check", "full"])


def test_doctor_shows_the_sanitizer() -> None:
    host = {"path": "/usr/local/cuda/bin/compute-sanitizer", "version": "2025.3.1.0 (build 1)", "ok": True}
    (check,) = _profilers({"sanitizer": host})
    assert check.name == "sanitizer" and check.status == "ok"
    assert check.detail == "/usr/local/cuda/bin/compute-sanitizer (version 2025.3.1.0 (build 1))"
    image = {"image": "kcoral-ncu:latest", "ok": True, "note": "compute-sanitizer must be on the PATH"}
    assert "must be on the PATH" in _profilers({"sanitizer": image})[0].detail
    (absent,) = _profilers({"sanitizer": {"ok": False, "reason": "compute-sanitizer ... is not installed"}})
    assert absent.status == "warn" and "not installed" in absent.detail
