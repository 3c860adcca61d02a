"""The timeline on the client's side: Client.timeline checks its options and command before anything is
sent, and kcoral doctor shows the timeline's torch with its version, or why it cannot record."""

from __future__ import annotations

import pytest

from kcoral.cli.commands.doctor import _profilers
from kcoral.cli.library import Client
from kcoral.protocol.errors import UsageError


def test_client_refuses_before_sending() -> None:
    kc = Client("http://127.0.0.1:9")  # nothing listens: must not be reached
    with pytest.raises(UsageError, match="records Python programs only"):
        kc.timeline(["./bench"])
    with pytest.raises(UsageError, match="--nsys is not allowed"):
        kc.timeline(["python", "b.py"], ["--nsys"])


def test_doctor_shows_the_timeline() -> None:
    host = {"path": "/opt/venv/bin/python", "version": "torch 2.11.0+cu130, CUDA 13.0", "ok": True}
    (check,) = _profilers({"timeline": host})
    assert check.name == "timeline" and check.status == "ok"
    assert check.detail == "/opt/venv/bin/python (version torch 2.11.0+cu130, CUDA 13.0)"
    (absent,) = _profilers({"timeline": {"ok": False, "reason": "the jobs' Python (python3) cannot import torch"}})
    assert absent.status == "warn" and "cannot import torch" in absent.detail
