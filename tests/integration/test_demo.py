"""README's first command, `bash scripts/demo.sh`: the main job end to end on the embedded defaults."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import docker
import pytest

from tests.conftest import free_port

#: no timing asserted, nothing done to the engine that another file would see (scripts/test.sh)
pytestmark = pytest.mark.concurrent

ROOT = Path(__file__).resolve().parents[2]


def test_the_demo_runs_the_job_and_exits_with_its_code(tmp_path: Path, docker_client: docker.DockerClient) -> None:
    # the demo as README runs it, less its install: this session's interpreter has this checkout installed
    # (tests/conftest.py checks it), and it is the python3 the demo finds first (a reinstall took ~5 s, and
    # changed the install of whichever python3 came first on PATH: on a shared host, another checkout's)
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    env = {**os.environ, "KCORAL_PORT": str(free_port()), "KCORAL_INSTALLED": "1", "PATH": path}
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "demo.sh")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    # the server it started ends by SIGTERM (143 for `wait`): that is not the demo's exit code
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "512x512 matmul" in proc.stdout and ": ok, exit code 0" in proc.stderr, proc.stderr[-2000:]
