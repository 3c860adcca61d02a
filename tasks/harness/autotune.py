"""Every config of an autotuned Triton kernel compiled at once, before the autotuner benchmarks them.

On a cold kernel cache the first call of FLA's KDA forward autotunes kernel after kernel, and Triton
compiles each config on demand, one at a time, inside the benchmark. :func:`compile_ahead` hands
every config of a kernel that is about to be benchmarked to a thread pool first (Triton's own
``AsyncCompileMode``), then lets the autotuner go on as it would: the same configs, benchmarked the
same way, the same choice written to the cache. A kernel whose choice is already cached compiles
nothing more than before. Where Triton is absent, or is a version without these hooks, it changes
nothing.

The judge's two trusted processes (the supervisor's reference, the baseline's worker) make their
first calls at the same time and share one kernel cache: the autotuner's cache look-up, and the
benchmarks of a miss, are made under one lock (``flock`` on a file in the supervisor container's own
temporary folder, which the baseline's worker shares and no candidate can reach: not in the kernel
cache, of which the candidate gets a read-only view), so one process at a time benchmarks a kernel
and the other then reads its choice instead of timing the same configs on a shared GPU. On a warm
cache the look-ups take milliseconds and the two calls still overlap.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

_calls = threading.local()


def _threads() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@contextlib.contextmanager
def compile_ahead(threads: int | None = None) -> Iterator[None]:
    """While it is open, an autotuned kernel about to be benchmarked has all its configs compiled on
    ``threads`` threads (default: the CPUs this process may run on) first."""
    try:
        from triton.runtime import autotuner
        from triton.runtime._async_compile import AsyncCompileMode
    except ImportError:
        yield
        return
    tuner = autotuner.Autotuner
    real_run, real_check = tuner.run, getattr(tuner, "check_disk_cache", None)
    if real_check is None:
        yield
        return
    pool = ThreadPoolExecutor(threads or _threads(), thread_name_prefix="kcoral-compile")

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        _calls.current = (args, kwargs)
        try:
            return real_run(self, *args, **kwargs)
        finally:
            _calls.current = None

    def check_disk_cache(self: Any, tuning_key: Any, configs: list[Any], bench: Callable[[], None]) -> Any:
        def compiled_then_bench() -> None:
            call: tuple[tuple[Any, ...], dict[str, Any]] | None = getattr(_calls, "current", None)
            if call is not None and len(configs) > 1:
                _compile_all(self, configs, call[0], call[1], AsyncCompileMode(pool, ignore_errors=True))
            bench()

        with _cache_lock():
            return real_check(self, tuning_key, configs, compiled_then_bench)

    tuner.run, tuner.check_disk_cache = run, check_disk_cache
    try:
        yield
    finally:
        tuner.run, tuner.check_disk_cache = real_run, real_check
        pool.shutdown(wait=True, cancel_futures=True)


@contextlib.contextmanager
def _cache_lock() -> Iterator[None]:
    """The lock every process of this container takes around the autotuner's cache look-up (none if
    its file cannot be opened)."""
    fd = -1
    with contextlib.suppress(OSError):
        path = os.path.join(tempfile.gettempdir(), "kcoral-autotune.lock")
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        if fd >= 0:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        if fd >= 0:
            os.close(fd)  # releases the lock


def _compile_all(tuner: Any, configs: list[Any], args: tuple[Any, ...], kwargs: dict[str, Any], mode: Any) -> None:
    """Each config compiled (not launched) through the pool; one that fails to compile is left to the
    benchmark, which meets the same error and rules the config out as it always does."""
    with mode:
        for config in configs:
            with contextlib.suppress(Exception):
                tuner.fn.run(*args, **{**kwargs, **config.all_kwargs(), "warmup": True})
