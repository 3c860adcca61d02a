"""kill -9 with a job running and one queued: the queued job survives and runs once after the restart,
the running one is reported, its container removed."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.conftest import job_containers, make_tar
from tests.serverproc import ServerProcess, serving

#: a server of its own, the engine's faults behind its own proxy (tests.faults.engine_proxy), its containers
#: found by its instance label: nothing another file sees; no timing asserted (scripts/test.sh)
pytestmark = pytest.mark.concurrent


def _submit(http: httpx.Client, script: str) -> str:
    job_id = http.post("/v1/jobs", json={"argv": ["m.py"]}).json()["id"]
    assert http.put(f"/v1/jobs/{job_id}/input", content=make_tar({"m.py": script})).status_code == 200
    return job_id


def test_restart_keeps_queued_jobs_and_reports_the_running_one(tmp_path, job_image, docker_client):
    server = ServerProcess(tmp_path / "data", job_image)
    try:
        with serving(server) as http:
            running = _submit(http, "import time\nprint('working', flush=True)\ntime.sleep(120)\n")
            queued = _submit(http, "print('ran after the restart')\n")
            deadline = time.monotonic() + 30
            while http.get(f"/v1/jobs/{running}").json()["state"] != "running":
                assert time.monotonic() < deadline
                time.sleep(0.05)
            while not job_containers(docker_client, running):
                assert time.monotonic() < deadline
                time.sleep(0.05)
            server.kill()
            orphans = job_containers(docker_client, running)
            assert len(orphans) == 1, "the killed server left its job container behind"

            server.start()
            lost = http.get(f"/v1/jobs/{running}").json()
            assert lost["state"] == "finished" and lost["verdict"] == "infrastructure_error"
            assert "server stopped while this job was running" in lost["reason"]
            assert job_containers(docker_client, running) == []
            deadline = time.monotonic() + 60
            while (job := http.get(f"/v1/jobs/{queued}").json())["state"] != "finished":
                assert time.monotonic() < deadline
                time.sleep(0.1)
            assert job["verdict"] == "ok"
            assert http.get(f"/v1/jobs/{queued}/log").text == "ran after the restart\n"
    finally:
        for c in job_containers(docker_client, running):
            c.remove(force=True)
