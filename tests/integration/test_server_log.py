"""The server's own log: ``--log-format json`` gives one JSON object a line (uvicorn's lines too), and
every line about a job carries the job's id, in both formats."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import make_tar
from tests.serverproc import ServerProcess

#: no timing asserted, nothing done to the engine that another file would see (scripts/test.sh)
pytestmark = pytest.mark.concurrent


def one_job_logged(job_image: str, tmp_path: Path, *options: str) -> tuple[str, str]:
    """A server started with ``options`` runs one job and stops: the job's id and the server's log."""
    log = tmp_path / "server.log"
    server = ServerProcess(tmp_path / "data", job_image, 1, None, "--log-level", "info", *options, log=log)
    server.start()
    try:
        with httpx.Client(base_url=server.url, timeout=60) as http:
            job_id: str = http.post("/v1/jobs", json={"argv": ["m.py"], "timeout_s": 60}).json()["id"]
            assert http.put(f"/v1/jobs/{job_id}/input", content=make_tar({"m.py": "print(1)"})).status_code == 200
            deadline = time.monotonic() + 60
            while http.get(f"/v1/jobs/{job_id}").json()["state"] != "finished":
                assert time.monotonic() < deadline
                time.sleep(0.05)
    finally:
        server.stop()
        server.remove_containers()
    return job_id, log.read_text()


def test_json_lines_each_with_its_job(job_image: str, tmp_path: Path) -> None:
    job_id, log = one_job_logged(job_image, tmp_path, "--log-format", "json")
    docs = [json.loads(line) for line in log.splitlines() if line.strip()]  # every line is JSON
    assert all({"time", "level", "logger", "message"} <= d.keys() for d in docs)
    about = [d for d in docs if job_id in d["message"]]
    assert len(about) >= 2 and all(d.get("job") == job_id for d in about), about  # claimed, finished
    assert any(d["logger"].startswith("uvicorn") for d in docs)  # uvicorn's own lines, in the same shape


def test_text_lines_name_their_job(job_image: str, tmp_path: Path) -> None:
    job_id, log = one_job_logged(job_image, tmp_path)
    lines = [line for line in log.splitlines() if f"job {job_id} " in line]
    assert len(lines) >= 2 and all(f"[job {job_id}]" in line for line in lines), lines
