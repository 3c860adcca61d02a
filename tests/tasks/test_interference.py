"""tasks.harness.interference: the judge's unbilled waits, read from the kernel (pure: this process's
own counters), and which iterations they disturb."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from subprocess import PIPE

import pytest

from kcoral.tasks.harness import interference
from kcoral.tasks.harness.interference import JudgeWatch

#: what the kernel's scheduler did to this process: read where no other test file runs beside it (two
#: at a time, the host's two cores were others' too: 168 ms waited across a 50 ms sleep, CI at 9805fbd)
HOST_SCHEDULING = pytest.mark.alone


def test_an_iteration_is_disturbed_past_the_larger_of_its_limits() -> None:
    waits = [0.05, 0.15, 0.15, 3.0]
    calls = [10.0, 10.0, 5.0, 200.0]
    # limits: 0.1 ms, or 2% of the shorter call (0.2, 0.2, 0.1, 4.0 ms)
    assert interference.disturbed(waits, calls, 0.1, 0.02) == [False, False, True, False]


@HOST_SCHEDULING
def test_a_process_kept_off_its_cpu_is_seen_waiting() -> None:
    """A busy process pinned to this process's core: both want the core, so the wait this process's main
    thread reads from /proc/PID/schedstat grows by about the time it was kept off. (Two threads of this
    process took turns on the GIL instead, each asleep while the other ran: 0 ms waited in CI once.)"""
    core = min(os.sched_getaffinity(0))
    watch = JudgeWatch({"me": os.getpid()}, frozenset({core}))
    before = os.sched_getaffinity(0)
    spin = f"import os, time\nos.sched_setaffinity(0, {{{core}}})\nprint(flush=True)\nend = time.monotonic() + 5\n"
    spinner = subprocess.Popen([sys.executable, "-c", spin + "while time.monotonic() < end: pass"], stdout=PIPE)
    try:
        assert spinner.stdout is not None and spinner.stdout.readline() == b"\n"  # pinned, and spinning now
        os.sched_setaffinity(0, {core})
        start = watch.waited_ms(["me"])
        stop = time.monotonic() + 0.3
        while time.monotonic() < stop:
            pass
        waited = watch.waited_ms(["me"]) - start
    finally:
        os.sched_setaffinity(0, before)
        spinner.kill()
        spinner.communicate()
        watch.close()
    assert waited > 20.0, waited  # ~half of 300 ms shared with a spinning process; at least a few slices


@HOST_SCHEDULING
def test_an_idle_process_waits_next_to_nothing() -> None:
    watch = JudgeWatch({"me": os.getpid()}, frozenset(os.sched_getaffinity(0)))
    start, irq = watch.waited_ms(["me"]), watch.irq_ms()
    time.sleep(0.05)
    assert watch.waited_ms(["me"]) - start < 5.0 and watch.irq_ms() >= irq
    watch.close()


def test_an_iteration_with_the_gpu_slowed_is_disturbed() -> None:
    marks = interference.disturbed([0.0, 0.0, 0.5], [10.0, 10.0, 10.0], 0.1, 0.02, slowed=[0.0, 1.0])
    assert marks == [False, True, True]


@HOST_SCHEDULING
def test_a_core_running_a_process_is_seen_busy() -> None:
    """``busy_ms`` counts what a core ran (user and system time, anyone's): this process spinning 300 ms
    of its own CPU pinned to one core shows there (clock ticks of 10 ms), and the supervisor subtracts
    the candidate's own share of it to find others' work on the candidate's core. Others' work on the
    core counts too (a busy CI host's: once 1,210 ms in the window), never more than the window's time."""
    core = min(os.sched_getaffinity(0))
    watch = JudgeWatch({}, frozenset())
    before = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {core})
        opened, cpu = time.monotonic(), time.process_time()
        start = watch.busy_ms(core)
        while time.process_time() - cpu < 0.3:
            pass
        busy = watch.busy_ms(core) - start
        own, window = (time.process_time() - cpu) * 1e3, (time.monotonic() - opened) * 1e3
    finally:
        os.sched_setaffinity(0, before)
        watch.close()
    assert own - 20.0 <= busy <= window + 20.0, (busy, own, window)
    assert JudgeWatch({}, frozenset()).busy_ms(10**6) == 0.0  # no such core


def test_the_gpu_is_quiet_once_a_probe_answers_under_the_limit() -> None:
    """The fastest probe so far counts (three a round): a context switch's ~0.35 ms, then 0.1 ms."""
    probes = iter([0.4, 0.35, 0.5, 0.36, 0.09, 0.5])
    pauses: list[float] = []
    assert interference.busy_gpu(lambda: next(probes), 0.2, pause=pauses.append) is None
    assert pauses == [0.002]  # one round over the limit, one pause


def test_a_gpu_busy_through_every_round_gives_its_fastest_probe() -> None:
    probes = iter([0.5, 0.4, 0.45] * 4)
    pauses: list[float] = []
    assert interference.busy_gpu(lambda: next(probes), 0.2, rounds=4, pause=pauses.append) == 0.4
    assert len(pauses) == 4
