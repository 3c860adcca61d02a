"""tasks.harness.autotune on a real GPU: inside ``compile_ahead`` an autotuned Triton kernel's configs
are all compiled on the pool's threads before the autotuner benchmarks them, every config is still
benchmarked, the choice is written to the kernel cache, and the kernel computes what it should. Needs
an NVIDIA GPU, torch and triton. Without pytest:  python3 tests/tasks/test_autotune_gpu.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

try:
    import pytest
except ImportError:  # the GPU host may have no pytest
    pytest = None
if pytest is not None:
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    pytestmark = pytest.mark.gpu

# a cache of its own, autotuning choices kept: as the judge's supervisor runs (set before triton reads them)
os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="kcoral-autotune-test-")
os.environ["TRITON_CACHE_AUTOTUNING"] = "1"

import torch  # noqa: E402
import triton  # noqa: E402
import triton.compiler  # noqa: E402
import triton.language as tl  # noqa: E402

from kcoral.tasks.harness.autotune import compile_ahead  # noqa: E402

CONFIGS = [triton.Config({"BLOCK": b}, num_warps=w) for b in (128, 256, 512, 1024) for w in (2, 4)]


@triton.autotune(configs=CONFIGS, key=["n"])
@triton.jit
def _scaled_add(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) * 2.0 + tl.load(y + offs, mask=mask), mask=mask)


def _call_recording_compiles(kernel: Any) -> list[str]:
    """Call ``kernel`` (an autotuned _scaled_add) inside ``compile_ahead``, check what it computed, and
    return the name of the thread of each compile its JIT function made."""
    threads: list[str] = []
    real = triton.compiler.compile

    def recording(*args, **kwargs):  # type: ignore[no-untyped-def]
        threads.append(threading.current_thread().name)
        return real(*args, **kwargs)

    # a JIT function takes triton.compiler's compile at its first call (JITFunction.create_binder)
    assert not kernel.fn.device_caches, "the kernel ran before: it would not take the recording compile"
    triton.compiler.compile = recording
    n = 1_000_003
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    try:
        with compile_ahead(threads=4):
            kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
            torch.cuda.synchronize()
    finally:
        triton.compiler.compile = real
    assert torch.allclose(out, x * 2 + y)
    return threads


def test_every_config_is_compiled_on_the_pool_then_benchmarked() -> None:
    threads = _call_recording_compiles(_scaled_add)
    assert len(threads) == len(CONFIGS), threads
    assert all(name.startswith("kcoral-compile") for name in threads), threads
    assert len(_scaled_add.configs_timings) == len(CONFIGS)
    choices = list(Path(os.environ["TRITON_CACHE_DIR"]).rglob("*.autotune.json"))
    assert len(choices) == 1, choices


def test_a_cached_choice_compiles_only_the_chosen_config() -> None:
    """A second kernel object over the same source (what a new process sees: nothing compiled in
    memory): the choice is read from the cache, so only the chosen config is compiled, on this
    thread, as without the pool."""
    fresh = triton.autotune(configs=CONFIGS, key=["n"])(triton.jit(_scaled_add.fn.fn))
    threads = _call_recording_compiles(fresh)
    assert len(threads) == 1 and not any(name.startswith("kcoral-compile") for name in threads), threads


if __name__ == "__main__":
    test_every_config_is_compiled_on_the_pool_then_benchmarked()
    test_a_cached_choice_compiles_only_the_chosen_config()
    print("tests/tasks/test_autotune_gpu.py: 2 passed")
