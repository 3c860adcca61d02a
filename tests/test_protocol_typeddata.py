"""kcoral.protocol.typeddata's limits on a field (Bound) and a class's COMPLETE: pure, no Docker."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, ClassVar

import pytest

from kcoral.protocol.typeddata import Bound, DataError, from_data


@dataclass
class Sample:
    name: Annotated[str, Bound(max_chars=4)]
    times: Annotated[list[Annotated[float, Bound(positive=True)]], Bound(max_items=3)]
    tags: Annotated[dict[Annotated[str, Bound(max_chars=2)], int], Bound(max_items=2)] = field(default_factory=dict)


@dataclass
class Whole:
    COMPLETE: ClassVar[bool] = True

    a: int = 1
    b: int = 2


def test_text_is_cut_and_lists_and_objects_are_bounded_both_sides() -> None:
    got = from_data(Sample, {"name": "abcdef", "times": [1, 2.5, 3], "tags": {"xyz": 1, "w": 2}})
    assert got == Sample("abcd", [1.0, 2.5, 3.0], {"xy": 1, "w": 2})
    with pytest.raises(DataError, match=r"^times: more than 3 items$"):
        from_data(Sample, {"name": "a", "times": [1, 2, 3, 4]})
    with pytest.raises(DataError, match=r"^tags: more than 2 items$"):
        from_data(Sample, {"name": "a", "times": [], "tags": {"a": 1, "b": 2, "c": 3}})


@pytest.mark.parametrize("bad", [0, -1.5, -0.0])
def test_positive_means_above_zero(bad: float) -> None:
    with pytest.raises(DataError, match=r"^times\.1: must be above zero$"):
        from_data(Sample, {"name": "a", "times": [1, bad]})
    assert from_data(Sample, {"name": "a", "times": [1e-300]}).times == [1e-300]


def test_the_type_is_checked_before_the_bound() -> None:
    with pytest.raises(DataError, match=r"^times: must be a list$"):
        from_data(Sample, {"name": "a", "times": "1,2"})
    with pytest.raises(DataError, match=r"^name: must be text$"):
        from_data(Sample, {"name": 12345, "times": []})


def test_a_complete_class_needs_every_field_though_it_has_defaults() -> None:
    assert from_data(Whole, {"a": 3, "b": 4}) == Whole(3, 4)
    with pytest.raises(DataError, match=r"^b: missing$"):
        from_data(Whole, {"a": 3})
    assert Whole() == Whole(1, 2)  # Python callers keep the defaults
