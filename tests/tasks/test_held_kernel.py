"""tasks.harness.cpuwatch.HeldWatch on this kernel's own pressure stalls, not a file of ours: a process
alone in a cgroup v2 folder, pinned to one core beside a busy loop of another cgroup, is held up for as
long as it waited to run (its ``run_delay``); a process of its own beside it holds it up not at all
(``full``, not ``some``). The judge reads the same files of a candidate's container on a cgroup v2 host
(on this host's hybrid layout, the unified hierarchy; Docker's containers are in cgroup v1 here)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kcoral.tasks.harness.cpuwatch import HeldWatch, held_for_leaf

pytestmark = pytest.mark.alone  # busy loops on a core: no other file's timing beside it

SPIN = (
    "import os, sys, time\nos.sched_setaffinity(0, {int(sys.argv[1])})\nend = time.time() + float(sys.argv[2])\n"
    "while time.time() < end: pass\n"
)


def _unified() -> Path | None:
    """Where cgroup v2 is mounted here, if this process may make a folder there."""
    for root in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified")):
        if (root / "cgroup.procs").is_file() and (root / "cpu.pressure").is_file() and os.access(root, os.W_OK):
            return root
    return None


@pytest.fixture
def cgroup() -> Iterator[Path]:
    root = _unified()
    if root is None:
        pytest.skip("no writable cgroup v2 hierarchy with pressure stalls here")
    folder = root / f"kcoral-test-{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    try:
        yield folder
    finally:
        for pid in (folder / "cgroup.procs").read_text().split():
            (root / "cgroup.procs").write_text(pid)  # anything left goes back to the root
        folder.rmdir()


def _spin(core: int, seconds: float, into: Path | None = None) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-c", SPIN, str(core), str(seconds)])
    if into is not None:
        (into / "cgroup.procs").write_text(str(proc.pid))
    return proc


def _run_delay_ms(pid: int) -> float:
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[1]) / 1e6


def test_a_process_beside_someone_elses_busy_loop_is_held_up_as_long_as_it_waited(cgroup: Path) -> None:
    core = max(os.sched_getaffinity(0))
    held = held_for_leaf(cgroup.name, "2", cgroup.parent)
    assert isinstance(held, HeldWatch)
    mine = _spin(core, 3.0, into=cgroup)
    time.sleep(0.3)
    before, waited_before = held.ns(), _run_delay_ms(mine.pid)
    other = _spin(core, 1.5)  # another cgroup's work on the same core
    other.wait()
    got, waited = (held.ns() - before) / 1e6, _run_delay_ms(mine.pid) - waited_before
    mine.kill()
    mine.wait()
    assert waited > 300, waited  # they shared the core: it waited about half of 1.5 s
    assert 0.7 * waited < got < 1.3 * waited + 50, (got, waited)


def test_its_own_second_process_beside_it_holds_it_up_not_at_all(cgroup: Path) -> None:
    core = max(os.sched_getaffinity(0))
    held = held_for_leaf(cgroup.name, "2", cgroup.parent)
    assert held is not None
    first, second = _spin(core, 2.0, into=cgroup), _spin(core, 2.0, into=cgroup)
    time.sleep(0.3)
    before, waited_before = held.ns(), _run_delay_ms(first.pid)
    time.sleep(1.0)
    got, waited = (held.ns() - before) / 1e6, _run_delay_ms(first.pid) - waited_before
    for proc in (first, second):
        proc.kill()
        proc.wait()
    assert waited > 200, waited  # each waited for the other
    assert got < 0.25 * waited + 100, (got, waited)  # one of them always ran: no one else held it up
