"""A server killed mid-job: queued jobs survive, the running one is reported, its container removed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from kcoral.runner.sandbox import LABEL_JOB
from tests.conftest import free_port, make_tar

ROOT = Path(__file__).resolve().parents[2]


def _serve(data_dir: Path, port: int, image: str) -> subprocess.Popen:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kcoral",
            "serve",
            "--port",
            str(port),
            "--data-dir",
            str(data_dir),
            "--image",
            image,
            "--gpus",
            "none",
            "--cpu-slots",
            "1",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        start_new_session=True,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/health", timeout=2).status_code == 200:
                return proc
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise AssertionError("server did not come up")


def _submit(http: httpx.Client, script: str) -> str:
    job_id = http.post("/v1/jobs", json={"argv": ["m.py"]}).json()["id"]
    assert http.put(f"/v1/jobs/{job_id}/input", content=make_tar({"m.py": script})).status_code == 200
    return job_id


def test_restart_keeps_queued_jobs_and_reports_the_running_one(tmp_path, job_image, docker_client):
    port = free_port()
    proc = _serve(tmp_path / "data", port, job_image)
    http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)
    try:
        running = _submit(http, "import time\nprint('working', flush=True)\ntime.sleep(120)\n")
        queued = _submit(http, "print('ran after the restart')\n")
        deadline = time.monotonic() + 30
        while http.get(f"/v1/jobs/{running}").json()["state"] != "running":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        while not docker_client.containers.list(filters={"label": f"{LABEL_JOB}={running}"}):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
        orphans = docker_client.containers.list(all=True, filters={"label": f"{LABEL_JOB}={running}"})
        assert len(orphans) == 1, "the killed server left its job container behind"

        proc = _serve(tmp_path / "data", port, job_image)
        lost = http.get(f"/v1/jobs/{running}").json()
        assert lost["state"] == "finished" and lost["verdict"] == "infrastructure_error"
        assert "server stopped while this job was running" in lost["reason"]
        assert docker_client.containers.list(all=True, filters={"label": f"{LABEL_JOB}={running}"}) == []
        deadline = time.monotonic() + 60
        while (job := http.get(f"/v1/jobs/{queued}").json())["state"] != "finished":
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert job["verdict"] == "ok"
        assert http.get(f"/v1/jobs/{queued}/log").text == "ran after the restart\n"
    finally:
        http.close()
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
        for c in docker_client.containers.list(all=True, filters={"label": f"{LABEL_JOB}={running}"}):
            c.remove(force=True)
