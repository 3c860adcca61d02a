"""profiling.protowire: the protobuf wire-format reader, on well-formed and broken bytes."""

from __future__ import annotations

import pytest

from kcoral.profiling.protowire import (
    FIXED32,
    FIXED64,
    LEN,
    MAX_DEPTH,
    VARINT,
    WireError,
    double,
    fields,
    packed_fixed64,
    read_varint,
    signed64,
    text,
)


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def test_varints() -> None:
    for n in (0, 1, 127, 128, 300, 2**32, 2**63, 2**64 - 1):
        data = varint(n)
        assert read_varint(data, 0, len(data)) == (n, len(data))
    with pytest.raises(WireError, match="larger than 64 bits"):
        read_varint(b"\xff" * 9 + b"\x7f", 0, 10)
    with pytest.raises(WireError, match="longer than 10 bytes"):
        read_varint(b"\x80" * 11 + b"\x01", 0, 12)
    with pytest.raises(WireError, match="truncated varint at byte 1"):
        read_varint(b"\x00\x80\x80", 1, 3)
    assert signed64(2**64 - 5) == -5 and signed64(5) == 5


def test_fields_of_every_wire_type() -> None:
    data = (
        b"\x08\x96\x01"  # 1: varint 150
        + b"\x12\x03abc"  # 2: "abc"
        + b"\x19" + bytes.fromhex("000000000000f83f")  # 3: fixed64 (the double 1.5)
        + b"\x25\x01\x00\x00\x00"  # 4: fixed32 1
        + b"\x2a\x10" + bytes(range(16))  # 5: packed fixed64
    )  # fmt: skip
    got = list(fields(data))
    assert [(n, w) for n, w, _, _ in got] == [(1, VARINT), (2, LEN), (3, FIXED64), (4, FIXED32), (5, LEN)]
    assert got[0][2] == 150 and text(data, got[1][2], got[1][3]) == "abc" and double(got[2][2]) == 1.5
    assert got[3][2] == 1
    assert packed_fixed64(data, got[4][2], got[4][3]) == [0x0706050403020100, 0x0F0E0D0C0B0A0908]
    assert text(b"\xff\xfe", 0, 2) == "\ufffd\ufffd"  # bad UTF-8 never raises


@pytest.mark.parametrize(
    "data, message",
    [
        (b"\x12\x05abc", "5 bytes announced, 3 left"),
        (b"\x19\x00\x00", "truncated fixed64"),
        (b"\x25\x00", "truncated fixed32"),
        (b"\x0b", "unsupported wire type 3"),  # a group
        (b"\x0c", "unsupported wire type 4"),
        (b"\x0e\x00", "unsupported wire type 6"),
        (b"\x00\x00", "invalid field number 0"),
        (b"\x08", "truncated varint"),
        (b"\x12" + b"\xff" * 10 + b"\x01", "varint"),
    ],
)
def test_broken_bytes_raise_wire_errors(data: bytes, message: str) -> None:
    with pytest.raises(WireError, match=message):
        list(fields(data))


def test_lengths_are_checked_against_the_enclosing_message() -> None:
    inner = b"\x12\x04abcd"
    data = b"\x0a" + varint(len(inner)) + inner + b"tail"
    (_, _, start, end), *_ = fields(data[: 2 + len(inner)])
    assert [text(data, v, e) for _, _, v, e in fields(data, start, end, depth=1)] == ["abcd"]
    with pytest.raises(WireError):  # the inner field may not run past the end given for its message
        list(fields(data, start, end - 1, depth=1))
    with pytest.raises(WireError, match="nested deeper"):
        list(fields(data, start, end, depth=MAX_DEPTH + 1))
    with pytest.raises(WireError, match="not a multiple of 8"):
        packed_fixed64(bytes(12), 0, 12)
