"""README's first command, `bash scripts/demo.sh`: the main job end to end on the embedded defaults."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import docker

from tests.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]


def test_the_demo_runs_the_job_and_exits_with_its_code(tmp_path: Path, docker_client: docker.DockerClient) -> None:
    env = {**os.environ, "KCORAL_PORT": str(free_port())}
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "demo.sh")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    # the server it started ends by SIGTERM (143 for `wait`): that is not the demo's exit code
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "512x512 matmul" in proc.stdout and ": ok, exit code 0" in proc.stderr, proc.stderr[-2000:]
