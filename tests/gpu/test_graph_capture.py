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


def test_graphs_of_one_measurement_share_one_pool_of_scratch() -> None:
    """A side's batch graph and each call's own graph (what a timed case captures) hold one call's
    scratch between them, not one per graph, and each still computes from its buffers."""
    torch = pytest.importorskip("torch")
    device = Device("cuda", maps=False)
    n, scratch = 8, 1 << 28  # 8 calls, each allocating 1 GiB of float32 scratch
    sets = [(torch.zeros(1 << 20, device="cuda"), torch.empty(1 << 20, device="cuda")) for _ in range(n)]

    def call(x: torch.Tensor, out: torch.Tensor) -> Callable[[], None]:
        def run() -> None:
            tmp = torch.empty(scratch, device="cuda")
            tmp[: x.numel()].copy_(x).mul_(3)
            out.copy_(tmp[: x.numel()])

        return run

    torch.cuda.synchronize()
    before = torch.cuda.memory_reserved()
    calls = [call(x, out) for x, out in sets]
    batch = device.capture(calls)
    singles = [device.capture([c], batch) for c in calls]
    grown = (torch.cuda.memory_reserved() - before) / (1 << 30)
    print(f"9 graphs of calls with 1 GiB of scratch each: {grown:.2f} GiB reserved")
    assert grown < 2.5, f"{grown:.2f} GiB reserved: the graphs do not share their scratch"
    for graph, chosen in [(batch, range(n)), *((g, [k]) for k, g in enumerate(singles))]:
        for k in chosen:
            sets[k][0].copy_(torch.randn_like(sets[k][0]))
            sets[k][1].fill_(float("nan"))
        graph.replay()
        device.sync()
        for k in chosen:
            assert torch.equal(sets[k][1], sets[k][0] * 3)
