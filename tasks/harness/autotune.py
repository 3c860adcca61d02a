"""Every config of an autotuned Triton kernel compiled at once, before the autotuner benchmarks them.

On a cold kernel cache the first call of FLA's KDA forward autotunes kernel after kernel, and Triton
compiles each config on demand, one at a time, inside the benchmark. :func:`compile_ahead` hands
every config of a kernel that is about to be benchmarked to a thread pool first (Triton's own
``AsyncCompileMode``), then lets the autotuner go on as it would: the same configs, benchmarked the
same way, the same choice written to the cache. A kernel whose choice is already cached compiles
nothing more than before. Where Triton is absent, or is a version without these hooks, it changes
nothing.
"""

from __future__ import annotations

import contextlib
import os
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

        return real_check(self, tuning_key, configs, compiled_then_bench)

    tuner.run, tuner.check_disk_cache = run, check_disk_cache
    try:
        yield
    finally:
        tuner.run, tuner.check_disk_cache = real_run, real_check
        pool.shutdown(wait=True, cancel_futures=True)


def _compile_all(tuner: Any, configs: list[Any], args: tuple[Any, ...], kwargs: dict[str, Any], mode: Any) -> None:
    """Each config compiled (not launched) through the pool; one that fails to compile is left to the
    benchmark, which meets the same error and rules the config out as it always does."""
    with mode:
        for config in configs:
            with contextlib.suppress(Exception):
                tuner.fn.run(*args, **{**kwargs, **config.all_kwargs(), "warmup": True})
