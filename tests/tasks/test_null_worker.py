"""The empty call's worker of a CPU task (tasks.harness.worker --null) serves its calls without
importing torch: on a two-core host each of an evaluation's four starting processes spent ~1.5 s of
CPU importing it. Its calls answer as every worker's do, and it makes no other kind of call."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")  # where torch is installed, a worker that imports it maps libtorch

from kcoral.tasks.harness.channel import pair  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TASK = ROOT / "tasks" / "demo" / "softmax"


def _buffer(name: str, role: str, rows: int, cols: int) -> tuple[dict[str, object], int]:
    """A sealed memfd as the supervisor hands it over (tasks.harness.shared), and its wire form."""
    size = rows * cols * 4
    fd = os.memfd_create(name, os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, size)
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
    return {"name": name, "role": role, "shape": [rows, cols], "dtype": "float32", "nbytes": size}, fd


def test_the_empty_calls_worker_of_a_cpu_task_answers_without_torch() -> None:
    ours, theirs = pair()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT.parent), str(ROOT), *sys.path])}
    worker = subprocess.Popen(
        [sys.executable, "-P", "-m", "kcoral.tasks.harness.worker", "--null", str(TASK), str(theirs.fileno())],
        pass_fds=[theirs.fileno()],
        env=env,
    )
    theirs.close()
    try:
        assert ours.recv(60) == {"ok": True}
        buffers = [_buffer("x", "in", 64, 32), _buffer("y", "out", 64, 32)]
        fds = [fd for _, fd in buffers]
        setup = {
            "op": "setup",
            "case": "c0/null",
            "scalars": {"rows": 64, "cols": 32},
            "buffers": [w for w, _ in buffers],
        }
        ours.send({**setup, "null": True}, fds)
        assert ours.recv(30)["ok"] is True
        for _ in range(3):
            before = time.monotonic_ns()
            ours.send({"op": "call", "case": "c0/null"})
            answer = ours.recv(30)  # stamped as it was sent (the supervisor's hand-off lag: tasks.harness.link)
            assert answer["ok"] is True and before <= answer["at"] <= time.monotonic_ns()
        ours.send({**setup, "case": "c1"}, fds)
        answer = ours.recv(30)
        assert answer["ok"] is False and "only empty calls" in answer["error"]
        maps = Path(f"/proc/{worker.pid}/maps").read_text()
        assert "libtorch" not in maps, "the empty call's worker of a CPU task imported torch"
        ours.send({"op": "quit"})
        assert worker.wait(30) == 0
        for fd in fds:
            os.close(fd)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        ours.close()
