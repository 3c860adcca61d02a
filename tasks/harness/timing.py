"""The timing method: fresh inputs per sample, cache flush, device-wide synchronisation,
baseline and candidate interleaved (alternating which goes first), adaptive repetitions.

Every measured call's outputs are compared with the baseline's outputs on the same sample.
Clock functions are captured when this module is imported, before any candidate code runs.
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from tasks.harness.stats import median_rse

_perf_counter_ns = time.perf_counter_ns
_monotonic = time.monotonic
_Event = torch.cuda.Event
_synchronize = torch.cuda.synchronize


@dataclass
class TimingConfig:
    warmup_s: float = 1.0
    min_reps: int = 10
    max_reps: int = 100
    budget_s: float = 30.0
    rse_target: float = 0.005
    flush_bytes: int = 128 << 20

    @classmethod
    def from_manifest(cls, doc: dict[str, Any]) -> TimingConfig:
        return cls(**{k: doc[k] for k in cls.__dataclass_fields__ if k in doc})


@dataclass
class TimingResult:
    baseline_ms: list[float] = field(default_factory=list)
    kernel_ms: list[float] = field(default_factory=list)
    mismatch: str | None = None
    warmup_calls: int = 0
    stopped_by: str = ""


class Timer:
    """Times one zero-argument call on ``device`` with the cache flushed before it."""

    def __init__(self, device: str, flush_bytes: int) -> None:
        self.device = device
        self.flush = torch.empty(flush_bytes // 4, dtype=torch.float32, device=device)
        self._reset_l2 = _persisting_l2_reset() if device == "cuda" else None

    def __call__(self, fn: Callable[[], None]) -> float:
        self.flush.add_(1.0)  # touch every line: evicts what the previous call left in L2 / the CPU caches
        if self.device == "cuda":
            if self._reset_l2 is not None:
                self._reset_l2()
            _synchronize()
            start, end = _Event(enable_timing=True), _Event(enable_timing=True)
            start.record()
            fn()
            _synchronize()  # device-wide: work the call left on other streams counts
            end.record()
            end.synchronize()
            return float(start.elapsed_time(end))
        threads = threading.active_count()
        t0 = _perf_counter_ns()
        fn()
        elapsed = (_perf_counter_ns() - t0) / 1e6
        if threading.active_count() != threads:
            raise RuntimeError("the call left threads running: work after returning does not count")
        return elapsed


def _persisting_l2_reset() -> Callable[[], None] | None:
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
        fn = cuda.cuCtxResetPersistingL2Cache
        return lambda: fn() and None
    except (OSError, AttributeError):
        return None


def interleaved(timer: Timer, base: Callable[[], None], cand: Callable[[], None],
                refill: Callable[[int], None], poison: Callable[[], None],
                check: Callable[[], str | None], cfg: TimingConfig) -> TimingResult:
    """A B / B A ... pairs on fresh inputs until the medians are stable or the budget is spent."""
    result = TimingResult()
    end_warmup = _monotonic() + cfg.warmup_s
    while _monotonic() < end_warmup or result.warmup_calls < 3:
        refill(-1 - result.warmup_calls)
        timer(base)
        timer(cand)
        result.warmup_calls += 1
    deadline = _monotonic() + cfg.budget_s
    for i in range(cfg.max_reps):
        refill(i)
        poison()
        order = (("b", base), ("c", cand)) if i % 2 == 0 else (("c", cand), ("b", base))
        for side, fn in order:
            ms = timer(fn)
            (result.baseline_ms if side == "b" else result.kernel_ms).append(ms)
        problem = check()
        if problem and result.mismatch is None:
            result.mismatch = f"timed sample {i}: {problem}"
        if i + 1 >= cfg.min_reps:
            if max(median_rse(result.baseline_ms), median_rse(result.kernel_ms)) < cfg.rse_target:
                result.stopped_by = "stable"
                break
            if _monotonic() > deadline:
                result.stopped_by = "budget"
                break
    else:
        result.stopped_by = "max_reps"
    return result
