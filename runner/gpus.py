"""GPUs through NVML. NVML errors are translated here; a host without NVML simply has no GPUs."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from kcoral.protocol.models import GpuInfo

log = logging.getLogger("kcoral.gpus")

try:
    import pynvml
except ImportError:  # pragma: no cover - nvidia-ml-py is a dependency, but be explicit
    pynvml = None


@dataclass(frozen=True)
class GpuUsage:
    processes: tuple[int, ...]
    memory_used_mib: int


class Nvml:
    """A small view of NVML: list GPUs, and what is running on one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.error = ""
        self.available = False
        if pynvml is None:
            self.error = "nvidia-ml-py is not installed"
            return
        try:
            pynvml.nvmlInit()
            self.available = True
        except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
            self.error = f"NVML unavailable: {exc}"

    def list(self) -> list[GpuInfo]:
        if not self.available:
            return []
        with self._lock:
            try:
                driver = _text(pynvml.nvmlSystemGetDriverVersion())
                out = []
                for i in range(pynvml.nvmlDeviceGetCount()):
                    h = pynvml.nvmlDeviceGetHandleByIndex(i)
                    out.append(
                        GpuInfo(
                            index=i,
                            minor=pynvml.nvmlDeviceGetMinorNumber(h),
                            uuid=_text(pynvml.nvmlDeviceGetUUID(h)),
                            name=_text(pynvml.nvmlDeviceGetName(h)),
                            memory_total_mib=pynvml.nvmlDeviceGetMemoryInfo(h).total >> 20,
                            driver=driver,
                        )
                    )
                return out
            except pynvml.NVMLError as exc:
                self.error = f"NVML error: {exc}"
                log.warning("listing GPUs failed: %s", exc)
                return []

    def usage(self, index: int) -> GpuUsage | None:
        """Processes and memory on one GPU; None if NVML cannot tell."""
        if not self.available:
            return None
        with self._lock:
            try:
                h = pynvml.nvmlDeviceGetHandleByIndex(index)
                procs = pynvml.nvmlDeviceGetComputeRunningProcesses(h)
                procs += pynvml.nvmlDeviceGetGraphicsRunningProcesses(h)
                return GpuUsage(tuple(p.pid for p in procs), pynvml.nvmlDeviceGetMemoryInfo(h).used >> 20)
            except pynvml.NVMLError as exc:
                log.warning("reading GPU %d failed: %s", index, exc)
                return None

    def telemetry(self, index: int) -> dict[str, float] | None:
        """Clocks (MHz), temperature (C) and power (W) of one GPU right now."""
        if not self.available:
            return None
        with self._lock:
            try:
                h = pynvml.nvmlDeviceGetHandleByIndex(index)
                return {
                    "sm_clock_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
                    "mem_clock_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM),
                    "temperature_c": pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU),
                    "power_w": pynvml.nvmlDeviceGetPowerUsage(h) / 1000.0,
                }
            except pynvml.NVMLError as exc:
                log.warning("reading GPU %d telemetry failed: %s", index, exc)
                return None


def select_gpus(found: list[GpuInfo], wanted: str | tuple[int, ...]) -> list[GpuInfo]:
    """The GPUs this server leases: all ("auto"), none, or the NVML indices given."""
    if wanted == "auto":
        return found
    if isinstance(wanted, str):  # "none" (the CLI turns index lists into tuples)
        return []
    by_index = {g.index: g for g in found}
    missing = [i for i in wanted if i not in by_index]
    if missing:
        raise ValueError(f"GPU indices {missing} not found; NVML sees {sorted(by_index)}")
    return [by_index[i] for i in wanted]


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value
