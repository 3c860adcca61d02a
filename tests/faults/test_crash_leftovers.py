"""kill -9 in the middle of a job's life, then a restart on the same data dir: the jobs the restart
ends lose every partial file (an upload's staged files, a job's raw and half-copied outputs) and say
why; a job that was only created (no upload begun) still takes its upload."""

from __future__ import annotations

import signal
import socket
import tarfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kcoral.runner.scheduler import UPLOAD_CUT
from kcoral.runner.store import jobs_dir
from tests.conftest import make_tar
from tests.faults.test_lifecycle import submit, wait_for
from tests.serverproc import ServerProcess, serving

#: a server of its own, the engine's faults behind its own proxy (tests.faults.engine_proxy), its containers
#: found by its instance label: nothing another file sees; no timing asserted (scripts/test.sh)
pytestmark = pytest.mark.concurrent

MiB = 1 << 20


def _wait_until(done: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, what
        time.sleep(0.001)


def test_a_kill_mid_upload_leaves_no_staged_file_and_the_job_says_its_upload_was_cut(
    tmp_path: Path, job_image: str
) -> None:
    server = ServerProcess(tmp_path / "data", job_image)
    with serving(server) as http:
        job_id = http.post("/v1/jobs", json={"argv": ["m.py"]}).json()["id"]
        folder = jobs_dir(tmp_path / "data") / job_id
        info = tarfile.TarInfo("big.bin")
        info.size = 16 * MiB  # staged as it arrives (runner.tarstage): a file of its own in staging/
        head = info.tobuf(format=tarfile.USTAR_FORMAT)
        size = len(head) + info.size + 2 * tarfile.BLOCKSIZE  # the whole tar's; a quarter of it is sent
        request = f"PUT /v1/jobs/{job_id}/input HTTP/1.1\r\nHost: x\r\nContent-Length: {size}\r\n\r\n"
        with socket.create_connection(("127.0.0.1", server.port)) as conn:
            conn.sendall(request.encode() + head + b"\1" * (4 * MiB))
            staged = folder / "staging" / f"{len(head)}-{16 * MiB}"
            _wait_until(lambda: staged.exists() and staged.stat().st_size >= MiB, "the upload was not staged")
            server.kill()
        assert (folder / "input.tar").exists()

        server.start()
        job = http.get(f"/v1/jobs/{job_id}").json()
        assert (job["state"], job["verdict"], job["reason"]) == ("finished", "infrastructure_error", UPLOAD_CUT)
        assert sorted(p.name for p in folder.iterdir()) == []


def test_a_job_only_created_before_a_kill_takes_its_upload_after_the_restart(tmp_path: Path, job_image: str) -> None:
    server = ServerProcess(tmp_path / "data", job_image)
    with serving(server) as http:
        job_id = http.post("/v1/jobs", json={"argv": ["m.py"]}).json()["id"]
        server.kill()
        server.start()
        assert http.get(f"/v1/jobs/{job_id}").json()["state"] == "created"
        r = http.put(f"/v1/jobs/{job_id}/input", content=make_tar({"m.py": "print('uploaded after the restart')\n"}))
        assert r.status_code == 200, r.text
        job = wait_for(http, job_id, "finished")
        assert job["verdict"] == "ok" and http.get(f"/v1/jobs/{job_id}/log").text == "uploaded after the restart\n"


def test_a_kill_mid_output_collection_leaves_neither_the_raw_nor_the_copied_outputs(
    tmp_path: Path, job_image: str
) -> None:
    """The server is stopped (SIGSTOP) once the copy of the job's 200 MiB of outputs has begun and
    before it ended (the raw folder goes right after it), then killed."""
    server = ServerProcess(tmp_path / "data", job_image)
    with serving(server) as http:
        script = (
            "import os\nout = os.environ['KCORAL_OUTPUT_DIR']\nprint('wrote', flush=True)\n"
            "for i in range(4):\n    open(f'{out}/part{i}', 'wb').write(b'x' * (50 << 20))\n"
        )
        job_id = submit(http, script)
        folder = jobs_dir(tmp_path / "data") / job_id
        _wait_until((folder / "outputs").exists, "the outputs were never collected")
        server.signal(signal.SIGSTOP)
        assert (folder / "out").exists(), "the collection had ended before the server was stopped"
        server.kill()
        assert (folder / "outputs").exists() and (folder / "out").exists()

        server.start()
        job = http.get(f"/v1/jobs/{job_id}").json()
        assert (job["state"], job["verdict"], job["outputs"]) == ("finished", "infrastructure_error", [])
        assert "the server stopped while this job was running" in job["reason"]
        assert sorted(p.name for p in folder.iterdir()) == ["input", "input.tar", "log", "log.streams"]
        assert http.get(f"/v1/jobs/{job_id}/log").text == "wrote\n"
