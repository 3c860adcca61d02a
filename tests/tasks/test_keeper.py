"""tasks.harness.keeper: its loop's rule, and a real keeper process on a core of this machine (no
Docker) that flushes when asked and goes when told."""

from __future__ import annotations

import os

import pytest

from kcoral.tasks.harness import keeper as keepers
from kcoral.tasks.harness.keeper import CALL, HOLD, PARK, QUIT, step


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
