"""tasks.harness.gpuguard on a clock and a probe of our own: a hot GPU let cool up to its limit, a GPU
another context keeps busy waited for and flagged once."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kcoral.tasks.harness.gpuclock import Reading
from kcoral.tasks.harness.gpuguard import GpuGuard


class Timeline:
    """A clock that moves only when paused, and the pauses taken."""

    def __init__(self) -> None:
        self.t = 0.0
        self.pauses: list[float] = []

    def now(self) -> float:
        return self.t

    def pause(self, s: float) -> None:
        self.pauses.append(s)
        self.t += s


class Heat:
    """NVML's readings: these temperatures in turn, then the last one for ever (None: NVML refused)."""

    def __init__(self, temps: list[int | None]) -> None:
        self.temps = temps
        self.reads = 0

    def read(self) -> Reading | None:
        temp = self.temps[min(self.reads, len(self.temps) - 1)]
        self.reads += 1
        return None if temp is None else Reading(1980, temp, 0)


def guard(clock: Heat | None = None, probes: Iterator[float] | None = None, **kw: float) -> tuple[GpuGuard, Timeline]:
    time = Timeline()
    probe = (lambda: next(probes)) if probes is not None else None
    limits = {"hot_c": 80.0, "cool_s": 60.0, "quiet_probe_ms": 0.25, **kw}
    return GpuGuard(clock, probe, pause=time.pause, now=time.now, **limits), time  # type: ignore[arg-type]


def test_a_gpu_at_or_under_the_limit_or_unread_is_not_waited_for() -> None:
    for heat in (None, Heat([80]), Heat([None])):
        g, time = guard(heat)
        assert g.cool() == 0.0 and time.pauses == []


def test_a_hot_gpu_is_let_cool_until_it_is_not() -> None:
    g, time = guard(Heat([90, 85, 81, 79]))
    assert g.cool() == 1.5 and time.pauses == [0.5, 0.5, 0.5]


def test_cooling_stops_at_cool_s_and_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    g, time = guard(Heat([95]), cool_s=2.0)
    assert g.cool() == 2.0 and len(time.pauses) == 4
    assert "the GPU was still at 95 C after 2 s of cooling" in capsys.readouterr().err


def test_a_quiet_gpu_is_not_flagged_and_a_cpu_has_nothing_to_probe() -> None:
    g, _ = guard(probes=iter([0.4, 0.1, 0.3]))
    assert g.wait_quiet() is None and not g.busy
    assert guard()[0].wait_quiet() is None


def test_a_gpu_kept_busy_is_flagged_once_and_then_not_waited_for() -> None:
    calls = 0

    def slow() -> Iterator[float]:
        nonlocal calls
        while True:
            calls += 1
            yield 0.35

    g, time = guard(probes=slow())
    flag = g.wait_quiet()
    assert flag == (
        "the GPU stayed busy with work the supervisor did not start (the fastest probe kernel took "
        "0.350 ms; limit 0.25 ms)"
    )
    assert g.busy and calls == 300 and len(time.pauses) == 100  # 100 rounds of 3 probes, 2 ms apart
    assert g.wait_quiet() is None and calls == 300


def test_a_busy_gpu_that_quiets_is_waited_for_not_flagged() -> None:
    g, time = guard(probes=iter([0.4] * 6 + [0.2] * 3))
    assert g.wait_quiet() is None and not g.busy and len(time.pauses) == 2


def test_a_gpu_still_busy_after_a_call_answered_reads_slow_three_times_and_an_idle_one_once() -> None:
    g, time = guard(probes=iter([0.4, 0.5, 0.45]))
    assert g.ran_on() == 0.4 and time.pauses == []  # never waits: the call's work is the call's
    probes = iter([0.1, 9.0])
    assert guard(probes=probes)[0].ran_on() is None and next(probes) == 9.0  # the first fast probe ends it
    assert guard(probes=iter([0.3, 0.2]))[0].ran_on() is None
    assert guard()[0].ran_on() is None  # a CPU


def test_a_gpu_flagged_busy_is_not_held_against_the_calls_after() -> None:
    g, _ = guard(probes=iter([0.35] * 300))
    assert g.wait_quiet() is not None
    assert g.ran_on() is None
