"""A trusted process on a timed worker's core that keeps that core awake while a CPU task's case is timed, and
flushes its caches before each call made there (tasks.harness.cores: one per core of the lease, other
than the supervisor's, on which a timed side runs).

Why: the supervisor polls for the answers of a worker on another core, so its own core never rests
while a call is timed, and its cache flush (tasks.harness.timedcall) runs on its own core. A worker's
core of its own rests while the other sides' calls run: where idle cores halt (a KVM guest without a
cpuidle driver), its next call pays the wake-up of a halted core and the caches the host gave to
other work meanwhile, and where it stays awake, that call finds caches no flush touched. On the
2-core dev VM, where the baseline's calls stay on the supervisor's core, identical code measured
0.81-0.86x as the supervisor left it, 1.06-1.14x beside a spinner that only kept the candidate's core
awake (bench/results/two-core-layout-dev-vm). With a keeper on every timed core but the supervisor's,
each call starts on an awake core whose private caches were just flushed, whichever side it is.

The keeper runs at idle priority (SCHED_IDLE): a worker woken on its core takes the core at once. Told
that a call is made on its core, it spins on until the core is taken from it (the worker woke: it
blocking first would let the core halt before the call arrives), then blocks on an eventfd until the
call is answered, so it takes nothing from the call; what it ran during the candidate's calls is left
out of "others' work on the candidate's core" (tasks.harness.callwatch). Outside the timed cases it
blocks.

The supervisor drives it through a shared page of four words (mode, flushes asked, flushes done, flush
bytes) and an eventfd it writes after every change; the keeper reads the page as it spins and sleeps
on the eventfd where its mode says so. ``python -P -m kcoral.tasks.harness.keeper PAGE_FD EVENT_FD``.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import resource
import subprocess
import sys
import time
from collections.abc import Iterator

#: the page's words
_MODE, _ASKED, _DONE, _BYTES = 0, 1, 2, 3
#: modes: blocked until told otherwise; spinning (the core kept awake); a call runs on its core
#: (blocked until it is answered); gone
PARK, HOLD, CALL, QUIT = 0, 1, 2, 3
_PAGE = mmap.PAGESIZE


class Keeper:
    """The supervisor's handle on one core's keeper (:func:`start`)."""

    def __init__(self, core: int, proc: subprocess.Popen[bytes], page: mmap.mmap, event: int) -> None:
        self.core = core
        self.proc = proc
        self._page = page
        self._words = memoryview(page).cast("q")
        self._event = event
        #: the mode it goes back to after a call (HOLD while a case is timed, else PARK)
        self.rest = PARK
        self._stat = os.open(f"/proc/{proc.pid}/schedstat", os.O_RDONLY)

    def _tell(self, mode: int) -> None:
        self._words[_MODE] = mode
        os.eventfd_write(self._event, 1)

    def keep(self, awake: bool) -> None:
        """Spin from now on (the core kept awake), or block until told otherwise."""
        self.rest = HOLD if awake else PARK
        self._tell(self.rest)

    @contextlib.contextmanager
    def calling(self) -> Iterator[None]:
        """A call runs on this core inside the block: the keeper blocks until it is answered."""
        self._tell(CALL)
        try:
            yield
        finally:
            self._tell(self.rest)

    def flush(self, nbytes: int, timeout_s: float) -> bool:
        """Flush this core's caches (``nbytes`` read and written there) and wait, polling, until done;
        False when it was not done within ``timeout_s`` (its core was kept from it)."""
        asked = self._words[_ASKED] + 1
        self._words[_BYTES] = nbytes
        self._words[_ASKED] = asked
        os.eventfd_write(self._event, 1)
        end = time.perf_counter() + timeout_s
        while self._words[_DONE] != asked:
            if time.perf_counter() > end or self.proc.poll() is not None:
                return False
        return True

    def cpu_ms(self) -> float:
        """Milliseconds it has run so far (its schedstat)."""
        try:
            return int(os.pread(self._stat, 128, 0).split()[0]) / 1e6
        except (OSError, ValueError, IndexError):
            return 0.0

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._tell(QUIT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5)
        if self.proc.poll() is None:
            self.proc.kill()
        self._words.release()
        self._page.close()
        for fd in (self._event, self._stat):
            os.close(fd)


def start(core: int) -> Keeper:
    """A keeper on ``core`` (a fresh interpreter started on that core alone)."""
    page_fd = os.memfd_create("kcoral-keeper")
    os.ftruncate(page_fd, _PAGE)
    event = os.eventfd(0, os.EFD_CLOEXEC)
    theirs = os.dup(event)
    proc = subprocess.Popen(
        [sys.executable, "-P", "-m", "kcoral.tasks.harness.keeper", str(page_fd), str(theirs)],
        pass_fds=[page_fd, theirs],
        preexec_fn=lambda: os.sched_setaffinity(0, {core}),  # noqa: PLW1509 - no threads yet
    )
    page = mmap.mmap(page_fd, _PAGE)
    os.close(page_fd)
    os.close(theirs)
    return Keeper(core, proc, page, event)


def _taken() -> int:
    """Times the core was taken from this process so far (involuntary switches: another process woke
    on its core, a call's worker among them; an interrupt is not one)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw


def step(mode: int, asked: int, done: int, taken: bool) -> str:
    """What the keeper does next: "flush" (asked for one it has not done), "quit", "sleep" (parked, or
    told of a call on its core and the core was taken from it since it last looked: the call's worker
    woke) or "spin"."""
    if asked != done:
        return "flush"
    if mode == QUIT:
        return "quit"
    if mode == PARK or (mode == CALL and taken):
        return "sleep"
    return "spin"


def run(page_fd: int, event: int) -> int:
    """The keeper's loop (see the module's docstring)."""
    with contextlib.suppress(OSError):  # a kernel without it: a waking worker still preempts it soon
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    page = mmap.mmap(page_fd, _PAGE)
    words = memoryview(page).cast("q")
    scratch = memoryview(bytearray(0))
    done, switches = 0, _taken()
    while True:
        was, switches = switches, _taken()
        what = step(words[_MODE], words[_ASKED], done, switches != was)
        if what == "flush":
            asked, half = words[_ASKED], max(words[_BYTES], 0) // 2
            if len(scratch) != 2 * half:
                scratch = memoryview(bytearray(2 * half))
            scratch[half:] = scratch[:half]  # every byte read or written on this core
            done = words[_DONE] = asked
        elif what == "quit":
            return 0
        elif what == "sleep":
            os.eventfd_read(event)  # until the page changes
            switches = _taken()


if __name__ == "__main__":
    sys.exit(run(int(sys.argv[1]), int(sys.argv[2])))
