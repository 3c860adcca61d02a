"""A CUDA buffer's device memory is given back once no tensor over it is left (tasks.harness.shared), on
a real GPU. Before, no mapping was ever undone: on an 80 GB H100 an evaluation of the pinned KDA task
ran out of memory holding the buffers of cases long finished (bench/results/gpu-host-issue29/ninth-h100).

Run on the GPU host: ``pytest -o addopts='' -m gpu tests/gpu/test_buffer_lifetime.py -s``.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

pytestmark = pytest.mark.gpu

GIB = 1 << 30


@pytest.fixture
def shared(torch: Any) -> Any:
    """tasks.harness.shared, imported once torch is known to be there (it imports torch)."""
    from kcoral.tasks.harness import shared

    return shared


def _free(torch: Any) -> int:
    torch.cuda.synchronize()
    return int(torch.cuda.mem_get_info()[0])


def test_buffers_dropped_case_after_case_hold_no_memory(torch: Any, shared: Any) -> None:
    """Twenty 2 GiB buffers, each dropped before the next is made (a case's, then the next case's):
    the card ends with what it had, not 40 GiB less."""
    shared.release_unused()
    before = _free(torch)
    for k in range(20):
        buf = shared.allocate(f"x{k}", (GIB // 2,), torch.float32, "cuda")  # 2 GiB
        buf.tensor.fill_(float(k))
        assert float(buf.tensor[-1]) == float(k)
        if buf.fd is not None:
            os.close(buf.fd)
        del buf
    freed = shared.release_unused()
    after = _free(torch)
    print(f"free before {before / GIB:.2f} GiB, after {after / GIB:.2f} GiB; the last release unmapped {freed} bytes")
    assert freed >= 2 * GIB, "the last buffer, dropped, was not unmapped"
    assert after >= before - GIB // 4


def test_a_mapping_of_a_sent_buffer_keeps_it_until_both_are_dropped(torch: Any, shared: Any) -> None:
    """The worker's mapping (attach, from the descriptor) keeps the memory after the supervisor dropped
    its own, and reads what was written; once both are dropped the memory is back."""
    shared.release_unused()
    before = _free(torch)
    buf = shared.allocate("y", (GIB // 4,), torch.float32, "cuda")  # 1 GiB
    assert buf.fd is not None
    seen = shared.attach(buf.wire, buf.fd, "cuda")
    os.close(buf.fd)
    buf.tensor.fill_(7.0)
    del buf
    shared.release_unused()
    assert float(seen[12345]) == 7.0, "the other mapping no longer reads the buffer"
    assert _free(torch) <= before - GIB + GIB // 8, "the buffer's memory went while a mapping held it"
    del seen
    shared.release_unused()
    assert _free(torch) >= before - GIB // 8
