"""The GPU's SM clock, temperature and throttle reasons, read by the supervisor through NVML.

A GPU that slows its clocks for heat or power while a case is timed measures whichever side ran
then slower; the supervisor reads these around every timed iteration (tasks.harness.supervisor):
an iteration during which the GPU throttled is left out and counted, and a GPU hotter than the
method's ``hot_c`` is let cool (for ``cool_s`` at most) before sampling starts. The report carries
the clock and the temperature.

Stdlib only (ctypes over the driver's ``libnvidia-ml.so.1``, which the job's container gets with the
driver's libraries): the harness imports nothing the task image may lack. The device is found by
its UUID (as CUDA names it), so the index NVML gives it inside the container does not matter.
Anything NVML refuses makes the reading unavailable (None), never an error of the evaluation.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

#: nvmlClocksEventReasons (nvml.h) that mean the GPU slowed itself: software power cap, hardware
#: slowdown, software and hardware thermal slowdown, power brake. Idle, application clock settings,
#: sync boost and display clocks are not slowdowns.
SW_POWER_CAP, HW_SLOWDOWN, SW_THERMAL, HW_THERMAL, POWER_BRAKE = 0x4, 0x8, 0x20, 0x40, 0x80
THROTTLING = SW_POWER_CAP | HW_SLOWDOWN | SW_THERMAL | HW_THERMAL | POWER_BRAKE
_NAMES = {
    SW_POWER_CAP: "power cap",
    HW_SLOWDOWN: "hardware slowdown",
    SW_THERMAL: "thermal (software)",
    HW_THERMAL: "thermal (hardware)",
    POWER_BRAKE: "power brake",
}
_NVML_CLOCK_SM, _NVML_TEMPERATURE_GPU = 1, 0


@dataclass(frozen=True)
class Reading:
    sm_mhz: int
    temp_c: int
    #: the throttle reasons' bitmask (THROTTLING's bits are slowdowns)
    reasons: int

    @property
    def throttled(self) -> bool:
        return bool(self.reasons & THROTTLING)


def reasons_text(mask: int) -> str:
    """The slowdowns in a reasons bitmask, in words ("" for none)."""
    return ", ".join(name for bit, name in _NAMES.items() if mask & bit)


class GpuClock:
    """One GPU's NVML handle (see :func:`open_clock`)."""

    def __init__(self, lib: ctypes.CDLL, handle: ctypes.c_void_p) -> None:
        self._lib, self._handle = lib, handle

    def read(self) -> Reading | None:
        """The SM clock, the temperature and the throttle reasons now (None when NVML refuses)."""
        mhz, temp, reasons = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_ulonglong()
        lib, h = self._lib, self._handle
        if lib.nvmlDeviceGetClockInfo(h, _NVML_CLOCK_SM, ctypes.byref(mhz)) != 0:
            return None
        if lib.nvmlDeviceGetTemperature(h, _NVML_TEMPERATURE_GPU, ctypes.byref(temp)) != 0:
            return None
        if lib.nvmlDeviceGetCurrentClocksThrottleReasons(h, ctypes.byref(reasons)) != 0:
            return None
        return Reading(mhz.value, temp.value, reasons.value)


def _library() -> ctypes.CDLL | None:
    """libnvidia-ml.so.1 from the loader's path, else from the folder this process loaded libcuda from
    (a container given the driver's libraries in a folder of their own: /usr/local/nvidia/lib64)."""
    names = ["libnvidia-ml.so.1"]
    try:
        with open("/proc/self/maps") as f:
            names += sorted(
                {line.split()[-1].rsplit("/", 1)[0] + "/libnvidia-ml.so.1" for line in f if "/libcuda.so" in line}
            )
    except OSError:
        pass
    for name in names:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def open_clock(uuid: str) -> GpuClock | None:
    """The NVML handle of the GPU whose UUID is ``uuid`` ("GPU-..." or bare hex), or None where NVML
    or the device cannot be reached."""
    lib = _library()
    if lib is None:
        return None
    try:
        if lib.nvmlInit_v2() != 0:
            return None
        handle = ctypes.c_void_p()
        name = uuid if uuid.startswith("GPU-") else f"GPU-{uuid}"
        if lib.nvmlDeviceGetHandleByUUID(name.encode(), ctypes.byref(handle)) != 0:
            return None
    except AttributeError:  # a library without these entry points
        return None
    clock = GpuClock(lib, handle)
    return clock if clock.read() is not None else None
