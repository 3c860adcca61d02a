"""Joining a cluster that is not there: a clear message and exit status 2, never a traceback or a
wait of minutes (Ray retries an address where nothing listens for that long)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.serverproc import ROOT, free_port


@pytest.mark.parametrize("command", ["serve", "agent"])
@pytest.mark.parametrize("address", ["127.0.0.1:{port}", "no-port-here"])
def test_a_cluster_that_is_not_there_is_said_so(command: str, address: str, tmp_path: object) -> None:
    where = address.format(port=free_port())
    done = subprocess.run(
        [sys.executable, "-m", "kcoral", command, "--ray", where, "--data-dir", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done
    assert "Traceback" not in done.stderr and f"kcoral {command}:" in done.stderr, done.stderr
    assert "nothing answers there" in done.stderr or "not HOST:PORT" in done.stderr, done.stderr
