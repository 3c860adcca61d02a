"""What the supervisor reads of a CPU call's outputs the moment it answers (tasks.harness.spots.Spots),
held against the copy it takes after: an element written after the answer is named; outputs finished
before it, NaNs and all, are not. Needs torch (CPU); skipped when torch is missing
(tests/tasks/test_torch_tests_in_image.py runs it in the job image)."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from kcoral.tasks.harness.spots import SPOTS, Spots  # noqa: E402


def test_outputs_written_before_the_answer_read_the_same_nans_and_all() -> None:
    y = torch.randn(64, 32)
    y[3, :] = math.nan  # a NaN the call wrote (softmax of a row of -inf) is no change
    k = torch.arange(10, dtype=torch.int64)
    s = Spots(dict(y=y, k=k, one=torch.tensor(2.5)))
    s.read({"y": y, "k": k, "one": torch.tensor(2.5)})
    assert s.changed({"y": y.clone(), "k": k.clone(), "one": torch.tensor(2.5)}) is None


def test_rows_written_after_the_answer_are_named() -> None:
    y = torch.full((1000, 16), math.nan)
    y[:930] = 1.0  # 7% of the rows left to a thread when the call answered
    s = Spots(dict(y=y))
    s.read({"y": y})
    y[930:] = 2.0
    why = s.changed({"y": y.clone()})
    assert why is not None and why.startswith("y changed after the call answered (element ")
    assert "read nan at the answer and 2.0 once copied" in why


def test_the_places_are_new_for_every_call_and_cover_a_small_output_whole() -> None:
    y = torch.zeros(1 << 16)
    a, b = Spots(dict(y=y)), Spots(dict(y=y))
    assert len(a.places["y"]) == SPOTS and not torch.equal(a.places["y"], b.places["y"])
    tiny = Spots(dict(y=torch.zeros(3)))
    assert len(tiny.places["y"]) == 3 and int(tiny.places["y"].max()) < 3
