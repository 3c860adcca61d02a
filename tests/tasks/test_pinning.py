"""tasks.harness.pinning: every thread of the process onto one core, and back."""

from __future__ import annotations

import os
import threading

import pytest

from kcoral.tasks.harness import pinning

pytestmark = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores")


def _masks() -> dict[int, frozenset[int]]:
    return {int(t): frozenset(os.sched_getaffinity(int(t))) for t in os.listdir("/proc/self/task")}


def test_every_thread_goes_onto_the_core_and_back() -> None:
    stop = threading.Event()
    helper = threading.Thread(target=stop.wait)
    helper.start()
    try:
        core = max(pinning.STARTED_ON)
        pinning.pin(frozenset({core}))
        assert set(_masks().values()) == {frozenset({core})} and len(_masks()) >= 2
        pinning.pin(None)
        assert set(_masks().values()) == {pinning.STARTED_ON}
    finally:
        stop.set()
        helper.join()
        pinning.pin(None)
