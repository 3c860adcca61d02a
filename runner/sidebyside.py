"""Blocking calls made side by side, each on a thread of its own (the engine's round trips overlap)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

from kcoral.runner.logsetup import child_thread

T = TypeVar("T")


def side_by_side(calls: Sequence[Callable[[], T]]) -> list[T | BaseException]:
    """Each call's result, or what it raised, in the calls' order, once every call has returned (the
    first runs on this thread)."""
    results: list[T | BaseException] = [RuntimeError("not run")] * len(calls)

    def run(i: int) -> None:
        try:
            results[i] = calls[i]()
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller, raised there
            results[i] = exc

    threads = [
        threading.Thread(target=run, args=(i,), daemon=True, name=child_thread("side")) for i in range(1, len(calls))
    ]
    for t in threads:
        t.start()
    if calls:
        run(0)
    for t in threads:
        t.join()
    return results


def raise_first(results: Sequence[object]) -> None:
    """Raise the first exception among ``results`` (side_by_side's), if any."""
    for result in results:
        if isinstance(result, BaseException):
            raise result
