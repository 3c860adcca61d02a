"""A small, bounds-checked reader of the protobuf wire format: no schema, no dependency.

    for number, wire_type, value, end in fields(data):           # the fields of one message, in order
        if wire_type == LEN:
            for inner in fields(data, value, end, depth=1): ...  # data[value:end]: its bytes

``value`` is the integer of a varint or fixed32/64 field (unsigned; ``end`` is 0) and, for a
length-delimited field (a string, bytes, a nested message, a packed array), the offset where its bytes
start in ``data`` (``end``: where they end). Every read is checked
against the end of the message it belongs to; what cannot be read (a varint of more than 10 bytes, a
length past its message's end, a group, an unknown wire type, field number 0) raises ``WireError`` with
the byte offset. Messages are only decoded when the caller asks, to at most ``MAX_DEPTH`` levels, so
a hostile file cannot make the reader recurse. The reader never looks outside ``data``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5
MAX_VARINT_BYTES = 10
#: how deep ``fields(..., depth=)`` may go (a trace reader needs 4: trace, packet, event, annotation)
MAX_DEPTH = 8


class WireError(ValueError):
    """Bytes that are not a well-formed protobuf message."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(f"{message} at byte {offset}")
        self.offset = offset


def read_varint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """(value, next position) of the varint at ``pos``; it must end before ``end``."""
    value = shift = 0
    for i in range(pos, min(end, pos + MAX_VARINT_BYTES)):
        byte = data[i]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            if value >> 64:
                raise WireError("varint larger than 64 bits", pos)
            return value, i + 1
        shift += 7
    if end - pos >= MAX_VARINT_BYTES:
        raise WireError("varint longer than 10 bytes", pos)
    raise WireError("truncated varint", pos)


def fields(data: bytes, start: int = 0, end: int | None = None, depth: int = 0) -> Iterator[tuple[int, int, int, int]]:
    """The fields of the message in ``data[start:end]``: (field number, wire type, value, end)."""
    if depth > MAX_DEPTH:
        raise WireError(f"messages nested deeper than {MAX_DEPTH}", start)
    end = len(data) if end is None else end
    pos = start
    while pos < end:
        tag_at = pos
        key, pos = read_varint(data, pos, end)
        number, wire_type = key >> 3, key & 7
        if number == 0 or number >= 1 << 29:
            raise WireError(f"invalid field number {number}", tag_at)
        if wire_type == VARINT:
            value, pos = read_varint(data, pos, end)
            yield number, wire_type, value, 0
        elif wire_type == LEN:
            length, pos = read_varint(data, pos, end)
            if length > end - pos:
                raise WireError(f"field {number}: {length} bytes announced, {end - pos} left", tag_at)
            yield number, wire_type, pos, pos + length
            pos += length
        elif wire_type in (FIXED64, FIXED32):
            size = 8 if wire_type == FIXED64 else 4
            if size > end - pos:
                raise WireError(f"field {number}: truncated fixed{size * 8}", tag_at)
            yield number, wire_type, int.from_bytes(data[pos : pos + size], "little"), 0
            pos += size
        else:
            raise WireError(f"field {number}: unsupported wire type {wire_type}", tag_at)


def text(data: bytes, start: int, end: int) -> str:
    """A string field (invalid UTF-8 is replaced, never an error)."""
    return data[start:end].decode("utf-8", errors="replace")


def signed64(value: int) -> int:
    """An int64 field's value (varints carry two's complement)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def double(value: int) -> float:
    """A double field's value (fixed64 bits)."""
    return float(struct.unpack("<d", value.to_bytes(8, "little"))[0])


def packed_fixed64(data: bytes, start: int, end: int) -> list[int]:
    """The values of a packed ``repeated fixed64`` field."""
    if (end - start) % 8:
        raise WireError("packed fixed64 array of a length not a multiple of 8", start)
    return [int.from_bytes(data[i : i + 8], "little") for i in range(start, end, 8)]
