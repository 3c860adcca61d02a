"""Typed documents as JSON, the one way kcoral reads and writes them: plain dataclasses (frozen where a
document is), made from JSON data by :func:`from_data`, which checks every type and names the first place
that is wrong (:class:`DataError`), and written by :func:`to_data`. The API's data
(:mod:`kcoral.protocol.models`) and the evaluation's documents (kcoral.tasks.documents) are declared and
read this way, and so are the supervisor's two files (kcoral.tasks.harness.schema: the case file and its
result): stdlib only, so that the judge's containers import it too.

A field's type may carry limits, ``Annotated[list[float], Bound(max_items=10000)]``: a list or an object
of more items is refused, one of more than ``keep_items`` is read to its first ones (the rest dropped
unread), text over ``max_chars`` is cut to them, a ``positive`` number must be above zero.
A class whose ``STRICT`` is true refuses a field it does not have; one whose ``COMPLETE`` is true needs every
field given (its defaults are for Python callers, not for documents).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import types
import typing
from collections.abc import Callable
from enum import Enum
from typing import Annotated, Any, Literal, TypeVar, Union

_T = TypeVar("_T")


@dataclasses.dataclass(frozen=True)
class Bound:
    """Limits on one field's value, as ``Annotated`` metadata (see the module's docstring)."""

    #: a list or an object of more items is refused
    max_items: int | None = None
    #: of a list or an object, only the first this many items are read (the rest dropped unread)
    keep_items: int | None = None
    #: text is cut to this many characters
    max_chars: int | None = None
    #: a number must be above zero
    positive: bool = False


class DataError(ValueError):
    """JSON that is not the data asked for: where (``python.timeout_s``, ``outputs.0.size``) and why."""

    def __init__(self, where: str, what: str) -> None:
        where = where.encode(errors="backslashreplace").decode()  # a key may be a lone surrogate
        super().__init__(f"{where}: {what}" if where else what)
        self.where = where
        self.what = what


def to_data(value: Any, *, drop_none: bool = False) -> Any:
    """A dataclass (or a list of them) as JSON data: dicts, lists, text and numbers (an enum as its value).
    ``drop_none``: a dataclass's fields that are None are left out (a document's absent figures), at every
    depth; None inside a dict or a list stays."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        items = ((f.name, getattr(value, f.name)) for f in dataclasses.fields(value))
        return {name: to_data(v, drop_none=drop_none) for name, v in items if not (drop_none and v is None)}
    if isinstance(value, list | tuple):
        return [to_data(v, drop_none=drop_none) for v in value]
    if isinstance(value, dict):
        return {k: to_data(v, drop_none=drop_none) for k, v in value.items()}
    if isinstance(value, Enum):
        return value.value
    return value


def from_data(cls: type[_T], data: object) -> _T:
    """``cls`` (a dataclass here, ``list[...]``, a union of specs) from JSON data, every type checked:
    :class:`DataError` names the first place that is wrong. Text must be valid Unicode (JSON can
    carry a lone surrogate, "\\ud800", which no argv, environment, file or database can hold) and
    numbers finite; a field a class does not have is refused where the class is STRICT (specs),
    ignored elsewhere (a newer server may show more)."""
    return typing.cast(_T, _convert(cls, data, ()))


def parse_json(text: str | bytes) -> object:
    """JSON text as data; DataError (not a JSONDecodeError or a RecursionError) when it is not JSON."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise DataError("", f"not JSON: {exc}") from None


def _where(path: tuple[str, ...]) -> str:
    return ".".join(p for p in path if p)


def _convert(tp: Any, value: object, path: tuple[str, ...]) -> object:
    origin = typing.get_origin(tp)
    if origin is Annotated:
        inner, *extras = typing.get_args(tp)
        bounds = [b for b in extras if isinstance(b, Bound)]
        for bound in bounds:
            value = _fit_size(bound, value, path)
        out = _convert(inner, value, path)
        for bound in bounds:
            out = _apply(bound, out, path)
        return out
    if dataclasses.is_dataclass(tp):
        return _dataclass(tp, value, path)  # type: ignore[arg-type]
    if origin in (Union, types.UnionType):
        return _union(typing.get_args(tp), value, path)
    if origin is list:
        if not isinstance(value, list):
            raise DataError(_where(path), "must be a list")
        (item,) = typing.get_args(tp)
        reader = _item_reader(item)
        if reader is None:
            return [_convert(item, v, (*path, str(i))) for i, v in enumerate(value)]
        items = []
        for i, v in enumerate(value):
            try:
                items.append(reader(v))
            except _Wrong as wrong:
                raise DataError(_where((*path, str(i))), wrong.what) from None
        return items
    if origin is dict:
        if not isinstance(value, dict):
            raise DataError(_where(path), "must be an object")
        key, item = typing.get_args(tp)
        return {_convert(key, k, (*path, "<key>")): _convert(item, v, (*path, str(k))) for k, v in value.items()}
    if origin is Literal:
        for option in typing.get_args(tp):
            if value == option and isinstance(value, bool) == isinstance(option, bool):  # True is not 1
                return option
        raise DataError(_where(path), f"must be {' or '.join(repr(str(a)) for a in typing.get_args(tp))}")
    if tp is Any:
        return value
    if isinstance(tp, type) and issubclass(tp, Enum):
        try:
            return tp(value)
        except ValueError:
            raise DataError(_where(path), f"must be one of: {', '.join(str(m.value) for m in tp)}") from None
    if tp is str:
        return _text(value, path)
    reader = _SCALARS.get(tp)
    if reader is None:
        raise TypeError(f"from_data cannot make {tp!r}")  # a programming error: a type this module lacks
    try:
        return reader(value)
    except _Wrong as wrong:
        raise DataError(_where(path), wrong.what) from None


class _Wrong(Exception):
    """A scalar that is not of its type (the caller names where)."""

    def __init__(self, what: str) -> None:
        self.what = what


#: a whole number must fit a signed 64-bit integer (what SQLite and every C library below take): JSON
#: carries integers of any length, and Python reads 4,000 digits as one
_INT_LIMIT = 1 << 63


def _read_bool(value: object) -> bool:
    if not isinstance(value, bool):
        raise _Wrong("must be true or false")
    return value


def _read_int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Wrong("must be a whole number")
    if not -_INT_LIMIT <= value < _INT_LIMIT:
        raise _Wrong("must be a whole number that fits 64 bits")
    return value


def _read_float(value: object) -> float:
    if type(value) is float:
        if value - value == 0.0:  # finite: inf - inf and nan - nan are nan
            return value
        raise _Wrong("must be a finite number")
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Wrong("must be a finite number")
    try:
        return float(value)
    except OverflowError:  # an integer of more than 308 digits
        raise _Wrong("must be a finite number") from None


_SCALARS: dict[object, Callable[[object], object]] = {bool: _read_bool, int: _read_int, float: _read_float}


@functools.cache
def _item_reader(tp: Any) -> Callable[[object], object] | None:
    """A list item's reader where the item is a plain scalar (a float, maybe with a Bound), so that a list
    of 10,000 samples is read without the general path's per-item dispatch; None for any other type."""
    if typing.get_origin(tp) is Annotated:
        inner, *extras = typing.get_args(tp)
        bounds = [b for b in extras if isinstance(b, Bound)]
        read = _SCALARS.get(inner)
        if read is None or not any(b.positive for b in bounds):  # sizes and cuts do nothing to a scalar
            return read
        return lambda value: _above_zero(read(value))
    return _SCALARS.get(tp)


def _fit_size(bound: Bound, value: object, path: tuple[str, ...]) -> object:
    """Before a list or an object is read item by item: refused when it holds too many, its first
    ``keep_items`` when it holds more."""
    if not isinstance(value, list | dict):
        return value
    if bound.max_items is not None and len(value) > bound.max_items:
        raise DataError(_where(path), f"more than {bound.max_items} items")
    if bound.keep_items is not None and len(value) > bound.keep_items:
        if isinstance(value, list):
            return value[: bound.keep_items]
        return dict(itertools.islice(value.items(), bound.keep_items))
    return value


def _apply(bound: Bound, value: object, path: tuple[str, ...]) -> object:
    """A value as read, with the bound's cut and its check of sign."""
    if bound.max_chars is not None and isinstance(value, str):
        return value[: bound.max_chars]
    if bound.positive and isinstance(value, int | float):
        try:
            return _above_zero(value)
        except _Wrong as wrong:
            raise DataError(_where(path), wrong.what) from None
    return value


def _above_zero(value: object) -> object:
    """A number read under ``Bound(positive=True)``: above zero, or refused."""
    if not value > 0:  # type: ignore[operator]
        raise _Wrong("must be above zero")
    return value


def _text(value: object, path: tuple[str, ...]) -> str:
    if not isinstance(value, str):
        raise DataError(_where(path), "must be text")
    try:
        value.encode()
    except UnicodeEncodeError:
        raise DataError(_where(path), "holds a lone surrogate (text that is not valid Unicode)") from None
    return value


def _union(options: tuple[Any, ...], value: object, path: tuple[str, ...]) -> object:
    if value is None and type(None) in options:
        return None
    kinds = _kinds(tuple(o for o in options if o is not type(None)))
    if kinds:  # specs: told apart by kind, the first one's when it is left out
        if not isinstance(value, dict):
            raise DataError(_where(path), "must be an object")
        kind = value.get("kind", next(iter(kinds)))
        if not isinstance(kind, str) or kind not in kinds:  # a list or an object cannot be looked up
            raise DataError(_where(path), f"unknown job kind; a server runs: {', '.join(kinds)}")
        return _convert(kinds[kind], value, (*path, str(kind)))
    others = [o for o in options if o is not type(None)]
    for inner in others[:-1]:  # X | Y: the first that takes the value (float | bool: a number, then true/false)
        try:
            return _convert(inner, value, path)
        except DataError:
            pass
    return _convert(others[-1], value, path)  # X | None, or the last option: its error is the one named


@functools.cache
def _kinds(options: tuple[Any, ...]) -> dict[str, type]:
    """The union's classes by the default of their ``kind`` field ({} for a union of other types)."""
    out: dict[str, type] = {}
    for option in options:
        kind = _fields(option).get("kind") if isinstance(option, type) and dataclasses.is_dataclass(option) else None
        if kind is None or not isinstance(kind[1], str):
            return {}
        out[str(kind[1])] = option
    return out


@functools.cache
def _fields(cls: type) -> dict[str, tuple[Any, object]]:
    """A dataclass's fields that JSON sets: name -> (type, default or MISSING)."""
    hints = typing.get_type_hints(cls, include_extras=True)
    out: dict[str, tuple[Any, object]] = {}
    for f in dataclasses.fields(cls):
        if f.init:
            out[f.name] = (hints[f.name], f.default)
    return out


def _dataclass(cls: type, value: object, path: tuple[str, ...]) -> object:
    if not isinstance(value, dict):
        raise DataError(_where(path), "must be an object")
    fields = _fields(cls)
    if getattr(cls, "STRICT", False):
        for name in value:
            if name not in fields:
                raise DataError(_where((*path, str(name))), "no such field (a typo is refused)")
    complete = getattr(cls, "COMPLETE", False)
    kwargs = {}
    for f in dataclasses.fields(cls):  # in the class's order: the first wrong field is the one named
        if not f.init:
            continue
        if f.name in value:
            kwargs[f.name] = _convert(fields[f.name][0], value[f.name], (*path, f.name))
        elif complete or _no_default(f):
            raise DataError(_where((*path, f.name)), "missing")
    try:
        return cls(**kwargs)
    except DataError as exc:  # the class's own checks (__post_init__)
        raise DataError(_where((*path, exc.where)), exc.what) from None


def _no_default(f: dataclasses.Field[Any]) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
