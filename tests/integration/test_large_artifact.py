"""A 200 MiB output file comes back through the server and the client without being held in memory.

The test server runs in this process (uvicorn in a thread), so this process's resident memory covers
the server's side of the transfer (FileResponse) and the client's (KcoralClient.download streams to
disk). It is sampled during the download (not the process's lifetime peak, which an earlier test may
already have raised above anything this one does).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from kcoral.cli.client import KcoralClient
from kcoral.cli.runflow import PythonRun, RunOptions
from kcoral.protocol.models import PythonSpec, Verdict
from tests.conftest import RunningServer

#: no timing asserted, nothing done to the engine that another file would see (scripts/test.sh)
pytestmark = pytest.mark.concurrent

SIZE_MIB = 200

WRITER = f"""
import hashlib, os
digest = hashlib.sha256()
block = os.urandom(1 << 20)
with open(os.path.join(os.environ["KCORAL_OUTPUT_DIR"], "big.bin"), "wb") as f:
    for i in range({SIZE_MIB}):
        chunk = bytes([i % 256]) + block[1:]
        digest.update(chunk)
        f.write(chunk)
print("sha256", digest.hexdigest())
"""


def _rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


def _peak_during(work: Callable[[], Path]) -> tuple[Path, int]:
    """Run ``work`` while sampling this process's resident memory every 10 ms; (its result, the peak)."""
    peak, done = [_rss_bytes()], threading.Event()

    def sample() -> None:
        while not done.wait(0.01):
            peak[0] = max(peak[0], _rss_bytes())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        result = work()
    finally:
        done.set()
        sampler.join()
    return result, max(peak[0], _rss_bytes())


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def test_large_output_streams_back(server: RunningServer, tmp_path: Path) -> None:
    send = tmp_path / "send"
    send.mkdir()
    (send / "write_big.py").write_text(WRITER)
    spec = PythonSpec(argv=["write_big.py"], timeout_s=300, gpus=0)
    with KcoralClient(server.url) as client:
        # detach: the job runs to its end without any download yet
        assert PythonRun(client, RunOptions(spec=spec, send_dir=send, detach=True, poll_s=0.2)).run() == 0
        job_id = client.jobs()[0].id
        view = server.wait(job_id, timeout=300)
        assert view["verdict"] == Verdict.ok, server.log(job_id)
        (out,) = view["outputs"]
        assert out["path"] == "big.bin" and out["size"] == SIZE_MIB << 20
        printed = server.log(job_id).split("sha256 ")[1].split()[0]
        assert printed == out["sha256"]

        before = _rss_bytes()
        path, peak = _peak_during(lambda: client.download(job_id, "big.bin", tmp_path / "dl", out["sha256"]))
        grown = peak - before

    assert path.stat().st_size == SIZE_MIB << 20
    assert _sha256(path) == out["sha256"]
    assert grown < 32 << 20, f"peak RSS grew by {grown >> 20} MiB while downloading {SIZE_MIB} MiB"
