"""The candidate's worker imports the submission only once the supervisor says ``go``: until then no
code of the submission runs, so nothing it does can share the GPU (or the CPU) with the supervisor's
warm-up, whose autotuning choices are kept for every later evaluation on the host. Needs torch (run
inside the CPU job image by test_torch_tests_in_image)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("torch")

from kcoral.tasks.harness.channel import Channel, accept, listen  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TASK = ROOT / "tasks" / "demo" / "softmax"


def _idle(pid: int, quiet_s: float = 1.0, limit_s: float = 120.0) -> None:
    """Wait until the process has used no CPU for ``quiet_s``: it is blocked (here: on the socket)."""
    deadline, last, since = time.monotonic() + limit_s, -1, time.monotonic()
    while time.monotonic() < deadline:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        used = int(fields[11]) + int(fields[12])  # utime + stime, in ticks
        if used != last:
            last, since = used, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return
        time.sleep(0.1)
    raise AssertionError("the worker never went idle")


@contextlib.contextmanager
def _worker(tmp_path: Path, solution: str) -> Iterator[tuple[Channel, subprocess.Popen[bytes], Path]]:
    """A candidate's worker for ``solution`` (which may write ``mark``, passed formatted in), connected
    to a listener of ours: (our end, the worker, the mark's path); everything closed afterwards."""
    submission, mark = tmp_path / "submission", tmp_path / "imported"
    submission.mkdir()
    (submission / "solution.py").write_text(solution.format(mark=str(mark)))
    sock = str(tmp_path / "worker.sock")
    listener = listen(sock)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT.parent), str(ROOT), *sys.path])}
    worker = subprocess.Popen(
        [sys.executable, "-P", "-m", "kcoral.tasks.harness.worker", str(TASK), sock], cwd=submission, env=env
    )
    chan = None
    try:
        chan, pid = accept(listener, 120)
        assert pid == worker.pid
        yield chan, worker, mark
    finally:
        worker.kill()
        worker.wait()
        listener.close()
        if chan is not None:
            chan.close()


#: writes the mark when imported
MARKING = "open({mark!r}, 'w').write('the submission ran')\n"


def test_the_submission_is_imported_only_after_go(tmp_path: Path) -> None:
    with _worker(tmp_path, MARKING + "def setup(data, *shape):\n    return lambda: None\n") as (chan, worker, mark):
        _idle(worker.pid)  # connected, torch imported, the task loaded: waiting
        assert not mark.exists(), "the submission ran before the supervisor said go"
        chan.send({"op": "go"})
        assert chan.recv(120) == {"ok": True}
        assert mark.read_text() == "the submission ran"
        chan.send({"op": "quit"})
        assert worker.wait(30) == 0


def test_anything_but_go_ends_the_worker_without_importing_the_submission(tmp_path: Path) -> None:
    with _worker(tmp_path, MARKING) as (chan, worker, mark):
        chan.send({"op": "call", "case": "c00"})
        assert worker.wait(120) == 1
        assert not mark.exists()
