"""Joining a cluster that is not there: a clear message and exit status 2, never a traceback or a
wait of minutes (Ray retries an address where nothing listens for that long)."""

from __future__ import annotations

import os
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


def test_an_agent_whose_jobs_could_read_its_secrets_does_not_start(tmp_path: object) -> None:
    """With --host-toolchain every job reads /usr /lib /bin /opt /etc: the Ray token (which opens
    every host of the cluster) and the data dir (holdout keys) must not be there."""
    cases = [
        ({"RAY_AUTH_TOKEN_PATH": "/etc/kcoral-ray-token"}, str(tmp_path), "the Ray token file /etc/kcoral-ray-token"),
        ({}, "/opt/kcoral-agent-data", "the data dir /opt/kcoral-agent-data"),
    ]
    agent = [sys.executable, "-m", "kcoral", "agent", "--ray", "127.0.0.1:1", "--host-toolchain"]
    for env, data_dir, said in cases:
        done = subprocess.run(
            [*agent, "--data-dir", data_dir],
            cwd=ROOT, capture_output=True, text=True, timeout=60, env={**os.environ, **env},
        )  # fmt: skip
        assert done.returncode == 2 and said in done.stderr and "refusing to start" in done.stderr, done.stderr
