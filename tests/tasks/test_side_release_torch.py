"""A dropped side gives up the supervisor's hold on its buffers (tasks.harness.timedcall.Side.release):
whoever still refers to the side holds no memory through it, and a buffer never sent to its worker
closes its descriptor. Needs torch (CPU); skipped when torch is missing
(tests/tasks/test_torch_tests_in_image.py runs it in the job image)."""

from __future__ import annotations

import gc
import os
import weakref
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from kcoral.tasks.harness import shared  # noqa: E402
from kcoral.tasks.harness.timedcall import Side  # noqa: E402


def test_a_released_side_holds_no_buffer_and_closes_what_it_never_sent() -> None:
    x = shared.allocate("x", (64, 8), torch.float32, "cpu")
    y = shared.allocate("y", (64,), torch.float32, "cpu", role="out")
    worker: Any = None  # never asked: release is this process's part of a drop
    side = Side(worker, "c05/set0", {"x": x.tensor}, {"y": y.tensor}, [x, y])
    y_fd = y.fd
    assert y_fd is not None
    x_fd, x.fd = x.fd, None  # x was sent: its descriptor is closed already
    assert x_fd is not None
    os.close(x_fd)
    held = [weakref.ref(t) for t in (x.tensor, y.tensor, side.snapshot["y"])]
    del x, y
    side.release()
    gc.collect()
    assert side.inputs == {} and side.outputs == {} and side.bufs == [] and side.snapshot == {}
    assert [ref() for ref in held] == [None, None, None]
    with pytest.raises(OSError):
        os.fstat(y_fd)  # closed with the side
