"""What crosses from a KernelBench or GPU MODE candidate's worker to the supervisor (tasks.packs.values,
tasks.packs.kernelbench): a call's result copied into the judge's buffers (numbers, tuples, a tensor
subclass), and the description of ModelNew's weights the supervisor compares with Model's. Needs torch
(CPU is enough); skipped when torch is missing (tests/tasks/test_torch_tests_in_image.py runs it in the
job image)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from kcoral.tasks.packs import values  # noqa: E402
from kcoral.tasks.packs.kernelbench import (  # noqa: E402
    MAX_STATE_BYTES,
    KernelBenchProblem,
    describe_state,
    state_difference,
    state_report,
)

PACKS = Path(__file__).resolve().parents[1] / "fixtures" / "packs"


def buffers(*shapes: tuple[int, ...]) -> dict[str, torch.Tensor]:
    return {f"out{i}": torch.full(shape, float("nan")) for i, shape in enumerate(shapes)}


def test_a_number_fills_a_scalar_output_and_a_tuple_fills_several() -> None:
    outs = buffers(())
    values.write_outputs(2.5, outs)  # a Python float where the reference returns a 0-d tensor
    assert outs["out0"].item() == 2.5
    outs = buffers((2,), ())
    values.write_outputs((torch.ones(2), torch.tensor(3.0)), outs)
    assert outs["out0"].tolist() == [1.0, 1.0] and outs["out1"].item() == 3.0


@pytest.mark.parametrize(
    ("result", "shapes", "reason"),
    [
        (2.5, [(2,)], "output 0 is a builtins.float, not a torch.Tensor"),  # a number for a tensor of 2
        ((torch.ones(2),), [(2,), ()], "returned 1 output(s), the reference returns 2"),
        (torch.ones(2, dtype=torch.float64), [(2,)], "output 0 is torch.float64 [2] on cpu"),
        (torch.ones(3), [(2,)], "the reference's is torch.float32 [2] on cpu"),
    ],
)
def test_a_result_that_does_not_fit_the_buffers_says_why(result: object, shapes: list, reason: str) -> None:
    with pytest.raises((TypeError, ValueError), match=re.escape(reason)):
        values.write_outputs(result, buffers(*shapes))


class Lazy(torch.Tensor):
    pass


def test_a_tensor_subclass_is_not_a_result() -> None:
    with pytest.raises(TypeError, match="Lazy, not a torch.Tensor"):
        values.write_outputs(torch.ones(2).as_subclass(Lazy), buffers((2,)))


def test_the_judges_own_output_buffer_or_a_view_of_it_is_not_a_result() -> None:
    """A call that writes into the output buffer it reached from the worker's frames and returns it (or a view
    of it) would make the worker's copy a copy onto itself, which torch skips: refused. A tensor of its own,
    and an empty output (no memory to share), pass."""
    outs = buffers((2, 3), (0,))
    for held in (outs["out0"], outs["out0"].view(3, 2).view(2, 3), outs["out0"][:, :].contiguous()):
        with pytest.raises(ValueError, match="output 0 is held in the judge's own output buffer"):
            values.write_outputs((held, torch.ones(0)), outs)
    values.write_outputs((torch.ones(2, 3), torch.ones(0)), outs)
    assert outs["out0"].tolist() == [[1.0] * 3] * 2


def test_a_number_drawn_with_the_inputs_is_the_same_in_every_draw_and_each_call_must_carry_its_set_ups() -> None:
    """A worker is given the values that are not tensors once, at set-up: 2_SumMax's get_inputs() draws its
    number with its matrix, and every draw of the problem holds the same number (drawn under the problem's
    seed) beside fresh tensors; a call whose numbers are not its set-up's ends the evaluation with them named
    (a NaN equals itself here)."""
    from kcoral.tasks.harness.timedcall import Side, _same_scalars  # noqa: PLC0415

    problem = KernelBenchProblem(PACKS / "kernelbench" / "level1", {"pack": {"entry": "2_SumMax.py"}})
    one, two = problem.make_inputs({}, 1, "cpu"), problem.make_inputs({}, 2, "cpu")
    assert not torch.equal(one["in0"], two["in0"]) and one["in1"] == two["in1"] and 0.25 <= one["in1"] < 1.25
    side = Side(None, "c", {}, {}, [], scalars={"in1": one["in1"]})  # type: ignore[arg-type]
    _same_scalars(side, two)
    with pytest.raises(RuntimeError, match=r"change from one draw to the next \(in1\)"):
        _same_scalars(side, {**two, "in1": 7.0})
    _same_scalars(Side(None, "c", {}, {}, [], scalars={"k": float("nan")}), {"k": float("nan")})  # type: ignore[arg-type]


def built(draw_first: bool = False, width: int = 8) -> torch.nn.Module:
    torch.manual_seed(42)
    if draw_first:
        torch.rand(1)
    model = torch.nn.Sequential(torch.nn.Linear(width, 4), torch.nn.BatchNorm1d(4))
    return model.to(torch.bfloat16)


def wire(report: dict) -> dict:
    return json.loads(json.dumps(report))  # as the supervisor reads it off the channel


def test_models_built_under_the_same_seed_match_and_an_extra_draw_is_named() -> None:
    want = describe_state(built())
    names = [entry[0] for entry in want]
    assert "1.num_batches_tracked" in names and ("0.weight", "bfloat16", [4, 8]) in [e[:3] for e in want]
    assert state_difference(want, wire(state_report(built()))) == ""
    assert "0.bias holds other values" in state_difference(want, wire(state_report(built(draw_first=True))))
    assert describe_state(lambda x: x) == []  # a ModelNew that is not a module holds nothing to compare


def test_a_model_too_big_to_name_goes_by_its_digest_alone() -> None:
    many = torch.nn.Sequential(*[torch.nn.Linear(1, 1) for _ in range(800)])
    report = wire(state_report(many))
    assert report["entries"] is None and len(json.dumps(report)) < MAX_STATE_BYTES
    assert state_difference(describe_state(many), report) == ""
    with torch.no_grad():
        many[0].weight.add_(1)
    assert "are not Model's (too many to name" in state_difference(describe_state(many), report)


def test_a_packs_tolerance_keys_are_the_judges_tolerance_fields() -> None:
    """tasks.packs.manifest checks kcoral-pack.json without torch, so it keeps its own list of the keys."""
    from dataclasses import fields

    from kcoral.tasks.harness.checks import Tolerance
    from kcoral.tasks.packs.manifest import TOLERANCE_KEYS

    assert {f.name for f in fields(Tolerance)} == TOLERANCE_KEYS
