"""A pack problem's drawn sample is freed the moment the supervisor drops it (tasks.packs.values,
tasks.packs.gpumode): no reference cycle keeps its tensors for the garbage collector. On an H100 a cycle in
``values.flatten`` kept every draw of a GPU MODE problem's batches of 8 alive until the collector's next
pass: 59.6 GiB of tensors in the supervisor, out of memory. Needs torch (CPU is enough); skipped when
torch is missing (tests/tasks/test_torch_tests_in_image.py runs it in the job image)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from kcoral.tasks.packs import values  # noqa: E402
from kcoral.tasks.packs.gpumode import GpuModeProblem  # noqa: E402

VECADD = Path(__file__).resolve().parents[1] / "fixtures" / "packs" / "gpumode" / "cpu_pack" / "vecadd_py"


@pytest.fixture
def no_collector() -> Iterator[None]:
    """The cyclic garbage collector off (what is freed is freed by reference counts alone), then on."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def test_flatten_leaves_no_cycle_holding_the_tensors(no_collector: None) -> None:
    t = torch.zeros(4)
    gone = weakref.ref(t)
    tree, leaves = values.flatten((t, [t, {"x": t, "n": 3}], None), "in")
    assert tree[0] == "tuple" and list(leaves) == ["in0", "in1", "in2"]
    assert values.unflatten(tree, leaves)[1][1]["n"] == 3
    del t, tree, leaves
    assert gone() is None
    assert gc.collect() == 0


def test_a_gpu_mode_draw_is_freed_when_dropped(no_collector: None) -> None:
    problem = GpuModeProblem(VECADD, {"pack": {"format": "gpumode"}, "workloads": []})
    problem.make_inputs({"size": 1000}, 1, "cpu")  # the first draw finds the preallocated outputs (cached)
    gc.collect()
    data = problem.make_inputs({"size": 1000}, 2, "cpu")
    watched = [weakref.ref(v) for v in data.values() if isinstance(v, torch.Tensor)]
    assert watched
    del data
    assert all(ref() is None for ref in watched)
    assert gc.collect() == 0
