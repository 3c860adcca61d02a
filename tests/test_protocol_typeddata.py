"""kcoral.protocol.typeddata's limits on a field (Bound) and a class's COMPLETE: pure, no Docker."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, ClassVar

import pytest

from kcoral.protocol.typeddata import Bound, DataError, from_data, parse_json


@dataclass
class Sample:
    name: Annotated[str, Bound(max_chars=4)]
    times: Annotated[list[Annotated[float, Bound(positive=True)]], Bound(max_items=3)]
    tags: Annotated[dict[Annotated[str, Bound(max_chars=2)], int], Bound(max_items=2)] = field(default_factory=dict)


@dataclass
class Kept:
    """Of the first two: the rest is dropped unread (an item past them of any type is no error)."""

    first: Annotated[list[Annotated[float, Bound(positive=True)]], Bound(keep_items=2)] = field(default_factory=list)
    named: Annotated[dict[str, int], Bound(keep_items=2)] = field(default_factory=dict)


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


def test_keep_items_reads_the_first_ones_and_drops_the_rest_unread() -> None:
    got = from_data(Kept, {"first": [1, 2, "three", -4], "named": {"b": 1, "a": 2, "c": "x"}})
    assert got == Kept([1.0, 2.0], {"b": 1, "a": 2})  # in the document's order
    assert from_data(Kept, {"first": [1], "named": {}}) == Kept([1.0], {})
    with pytest.raises(DataError, match=r"^first\.1: must be above zero$"):  # what is kept is checked
        from_data(Kept, {"first": [1, 0, 5]})
    with pytest.raises(DataError, match=r"^named: must be an object$"):
        from_data(Kept, {"named": [1, 2, 3]})


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


@dataclass
class Numbers:
    x: float = 0.0
    n: int = 0
    xs: list[float] = field(default_factory=list)


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ('{"x": 1' + "0" * 400 + "}", "x: must be a finite number"),  # past a float's range: no OverflowError
        ('{"x": -1' + "0" * 400 + "}", "x: must be a finite number"),
        ('{"xs": [1.5, 1' + "0" * 309 + "]}", "xs.1: must be a finite number"),
        ('{"x": 1e400}', "x: must be a finite number"),  # Python's json reads it as inf
        ('{"x": NaN}', "x: must be a finite number"),
        ('{"n": 9223372036854775808}', "n: must be a whole number that fits 64 bits"),
        ('{"n": -9223372036854775809}', "n: must be a whole number that fits 64 bits"),
        ('{"n": 1' + "0" * 4000 + "}", "n: must be a whole number that fits 64 bits"),
        ('{"xs": [1, true]}', "xs.1: must be a finite number"),
    ],
)
def test_numbers_past_what_a_float_or_64_bits_hold_are_refused_by_name(doc: str, message: str) -> None:
    with pytest.raises(DataError) as info:
        from_data(Numbers, parse_json(doc))
    assert str(info.value) == message


def test_numbers_at_the_edges_are_read() -> None:
    got = from_data(Numbers, parse_json('{"x": 1' + "0" * 300 + ', "n": 9223372036854775807, "xs": [1, 2.5, -0.0]}'))
    assert got.x == 1e300 and got.n == 2**63 - 1 and got.xs == [1.0, 2.5, -0.0]
    assert all(type(v) is float for v in got.xs)
    assert from_data(Numbers, {"n": -(2**63)}).n == -(2**63)
