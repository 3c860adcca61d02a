"""tasks.harness.gpuclock without a GPU: which throttle reasons count, and no NVML is no reading."""

from __future__ import annotations

import ctypes

import pytest

from kcoral.tasks.harness import gpuclock
from kcoral.tasks.harness.gpuclock import Reading, reasons_text


def test_only_slowdowns_count_as_throttled() -> None:
    idle, app_clocks, sync_boost, display = 0x1, 0x2, 0x10, 0x100
    assert not Reading(1980, 40, idle | app_clocks | sync_boost | display).throttled
    for bit in (gpuclock.SW_POWER_CAP, gpuclock.HW_SLOWDOWN, gpuclock.SW_THERMAL, gpuclock.HW_THERMAL):
        assert Reading(1500, 85, idle | bit).throttled
    assert reasons_text(gpuclock.SW_THERMAL | gpuclock.SW_POWER_CAP | idle) == "power cap, thermal (software)"
    assert reasons_text(idle) == ""


def test_no_nvml_library_is_no_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> ctypes.CDLL:
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(gpuclock.ctypes, "CDLL", missing)
    assert gpuclock.open_clock("GPU-0000") is None
