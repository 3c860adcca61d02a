"""The trusted batch fitted to the GPU's free memory (tasks.harness.memoryfit)."""

from __future__ import annotations

from kcoral.tasks.harness.memoryfit import fit_batch, per_call_bytes

GIB = 1 << 30


def test_a_call_needs_two_buffer_sets_with_output_copies_and_a_sample() -> None:
    assert per_call_bytes(input_bytes=10, output_bytes=3) == 2 * (10 + 6) + 10


def test_the_tasks_batch_where_it_fits() -> None:
    assert fit_batch(8, per_call=3 * GIB, free=130 * GIB) == 8


def test_fewer_calls_where_the_card_holds_fewer() -> None:
    # the pinned KDA task (about 3.2 GiB a call) beside 60 GiB taken: half of the 20 GiB free holds 3
    assert fit_batch(8, per_call=int(3.2 * GIB), free=20 * GIB) == 3


def test_every_call_on_its_own_where_not_two_fit() -> None:
    assert fit_batch(8, per_call=6 * GIB, free=20 * GIB) == 0


def test_no_batch_asked_is_no_batch() -> None:
    assert fit_batch(0, per_call=1, free=GIB) == 0
    assert fit_batch(1, per_call=1, free=GIB) == 0


def test_a_task_without_buffers_keeps_its_batch() -> None:
    assert fit_batch(8, per_call=0, free=0) == 8
