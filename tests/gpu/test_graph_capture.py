"""A worker's CUDA graph of a batch (tasks.harness.worker.Device.capture, TimingMethod.graph), on a real GPU:
a replay computes from whatever the buffers hold then, the empty call's graph replays, and a call that
synchronises with the host fails with the mode named.

Run on the GPU host: ``pytest -o addopts='' -m gpu tests/gpu/test_graph_capture.py -s``.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kcoral.tasks.harness.worker import Device

pytestmark = pytest.mark.gpu


def test_a_replay_computes_from_the_inputs_written_since_the_capture() -> None:
    torch = pytest.importorskip("torch")
    device = Device("cuda", maps=False)
    sets = [(torch.zeros(1 << 20, device="cuda"), torch.empty(1 << 20, device="cuda")) for _ in range(4)]

    def call(x: torch.Tensor, out: torch.Tensor) -> Callable[[], None]:
        return lambda: out.copy_(torch.sin(x) * 2 + 1)

    graph = device.capture([call(x, out) for x, out in sets])
    for round_ in range(3):
        for x, out in sets:
            x.copy_(torch.randn_like(x))
            out.fill_(float("nan"))
        graph.replay()
        device.sync()
        for k, (x, out) in enumerate(sets):
            assert torch.allclose(out, torch.sin(x) * 2 + 1), f"round {round_}, call {k}"


def test_the_empty_calls_graph_replays() -> None:
    pytest.importorskip("torch")
    device = Device("cuda", maps=False)
    graph = device.capture([lambda: None] * 8)
    for _ in range(3):
        graph.replay()
        device.sync()


def test_a_call_that_waits_for_the_host_cannot_be_captured() -> None:
    torch = pytest.importorskip("torch")
    device = Device("cuda", maps=False)
    x = torch.ones(16, device="cuda")
    with pytest.raises(RuntimeError, match="capturing the calls in a CUDA graph failed"):
        device.capture([lambda: x.sum().item()])
    # the device is usable after the failed capture
    assert float((x * 2).sum()) == 32.0
