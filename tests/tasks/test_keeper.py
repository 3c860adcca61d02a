"""tasks.harness.keeper: its loop's rule, and a real keeper process on a core of this machine (no
Docker) that flushes when asked and goes when told."""

from __future__ import annotations

import mmap
import os
import threading
import time

import pytest

from kcoral.tasks.harness import keeper as keepers
from kcoral.tasks.harness.keeper import CALL, HOLD, PARK, QUIT, Keeper, step


@pytest.mark.parametrize(
    ("mode", "asked", "done", "taken", "what"),
    [
        (PARK, 3, 2, False, "flush"),  # a flush asked for is done whatever the mode
        (CALL, 3, 2, True, "flush"),
        (QUIT, 2, 2, False, "quit"),
        (PARK, 2, 2, False, "sleep"),  # outside the timed cases
        (HOLD, 2, 2, False, "spin"),  # keeping the core awake
        (HOLD, 2, 2, True, "spin"),  # the other sides' calls come and go: it keeps on
        (CALL, 2, 2, False, "spin"),  # told of a call that has not taken the core yet: sleeping would let it halt
        (CALL, 2, 2, True, "sleep"),  # the call's worker took the core: nothing taken from the call
    ],
)
def test_the_keepers_next_step(mode: int, asked: int, done: int, taken: bool, what: str) -> None:
    assert step(mode, asked, done, taken) == what


def test_a_real_keeper_flushes_when_asked_in_any_mode_and_goes_when_told() -> None:
    keeper = keepers.start(max(os.sched_getaffinity(0)))
    try:
        assert keeper.flush(4 << 20, timeout_s=60)  # parked: woken to flush (the first starts its interpreter)
        keeper.keep(True)
        assert keeper.flush(4 << 20, timeout_s=60)
        with keeper.calling():
            assert keeper.flush(0, timeout_s=60)
        keeper.keep(False)
        assert keeper.cpu_ms() > 0
    finally:
        keeper.close()
    assert keeper.proc.returncode == 0


class _ThisProcess:
    """A Keeper's process handle for a loop run in a thread of this process."""

    pid = os.getpid()
    returncode: int | None = None

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float) -> int:
        self.returncode = 0  # the loop's own end is asserted by the test
        return 0

    def kill(self) -> None:  # pragma: no cover - the loop quits when told
        raise AssertionError("the keeper's loop did not quit")


def _rss_bytes() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))


def test_the_loop_flushes_the_bytes_asked_wakes_when_told_and_quits() -> None:
    """The keeper's loop itself (in a thread here, so that what it does is seen): a flush writes the
    bytes asked for on its core, a parked loop wakes for it, and QUIT ends it with 0."""
    page_fd = os.memfd_create("test-keeper")
    os.ftruncate(page_fd, mmap.PAGESIZE)
    event = os.eventfd(0, os.EFD_CLOEXEC)
    theirs = os.dup(event)
    ended: list[int] = []
    loop = threading.Thread(target=lambda: ended.append(keepers.run(page_fd, theirs)), daemon=True)
    keeper = Keeper(0, _ThisProcess(), mmap.mmap(page_fd, mmap.PAGESIZE), event)  # type: ignore[arg-type]
    loop.start()
    try:
        before = _rss_bytes()
        assert keeper.flush(64 << 20, timeout_s=30)  # parked: woken to flush
        assert _rss_bytes() - before >= 24 << 20  # the half it writes is this process's memory now
        with keeper.calling():
            assert keeper.flush(1 << 20, timeout_s=30)
        keeper.close()
        loop.join(10)
        assert ended == [0] and not loop.is_alive()
    finally:
        os.close(page_fd)
        os.close(theirs)


def _handle(proc: _ThisProcess) -> tuple[Keeper, int]:
    """A keeper's handle with no loop behind it (and its page's descriptor)."""
    page_fd = os.memfd_create("test-keeper")
    os.ftruncate(page_fd, mmap.PAGESIZE)
    return Keeper(0, proc, mmap.mmap(page_fd, mmap.PAGESIZE), os.eventfd(0)), page_fd  # type: ignore[arg-type]


def test_a_flush_nobody_does_is_late_and_a_dead_keepers_at_once() -> None:
    keeper, page_fd = _handle(_ThisProcess())
    began = time.perf_counter()
    assert not keeper.flush(1 << 20, timeout_s=0.05)  # no loop: it never says done
    assert 0.05 <= time.perf_counter() - began < 5
    dead = _ThisProcess()
    dead.returncode = 1
    gone, gone_fd = _handle(dead)
    began = time.perf_counter()
    assert not gone.flush(1 << 20, timeout_s=60)
    assert time.perf_counter() - began < 5  # not waited for
    for k, fd in ((keeper, page_fd), (gone, gone_fd)):
        k.close()
        os.close(fd)


def test_its_cpu_is_its_processs_schedstat_in_ms() -> None:
    keeper, page_fd = _handle(_ThisProcess())

    def read() -> float:
        with open(f"/proc/{os.getpid()}/schedstat") as f:
            return int(f.read().split()[0]) / 1e6

    before = read()
    ms = keeper.cpu_ms()
    assert before <= ms <= read()
    keeper.close()
    os.close(page_fd)
