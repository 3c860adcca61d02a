"""runner.sidebyside: blocking calls made at once, results and failures handed back in order."""

from __future__ import annotations

import threading

import pytest

from kcoral.runner.sidebyside import raise_first, side_by_side


def test_the_calls_run_at_once_and_their_results_come_back_in_order() -> None:
    met = threading.Barrier(3, timeout=10)  # passes only if all three wait on it together

    def call(value: int) -> int:
        met.wait()
        return value

    assert side_by_side([lambda: call(1), lambda: call(2), lambda: call(3)]) == [1, 2, 3]


def test_a_failure_is_handed_back_after_every_call_returned_and_raised_first() -> None:
    done = threading.Event()

    def slow() -> str:
        assert done.wait(10)
        return "slow"

    def fails() -> str:
        done.set()
        raise ValueError("no")

    results = side_by_side([fails, slow])
    assert isinstance(results[0], ValueError) and results[1] == "slow"
    with pytest.raises(ValueError, match="no"):
        raise_first(["ok", *results])
    raise_first(["ok", 2])  # nothing to raise
    assert side_by_side([]) == []
