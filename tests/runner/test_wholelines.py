"""The streams of a job's output meet in its log at line ends, not inside a line."""

from __future__ import annotations

from kcoral.protocol.framing import STDERR, STDOUT
from kcoral.runner import wholelines
from kcoral.runner.wholelines import WholeLines


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_line_written_in_pieces_is_not_split_by_the_other_stream() -> None:
    lines = WholeLines(Clock())
    out = []
    for piece in ([(STDOUT, b"out")], [(STDERR, b"err")], [(STDOUT, b"\n")], [(STDERR, b"\n")]):
        out += lines.feed(piece)
    assert out + lines.rest() == [(STDOUT, b"out\n"), (STDERR, b"err\n")]


def test_finished_lines_pass_at_once_and_the_unfinished_rest_waits() -> None:
    lines = WholeLines(Clock())
    assert lines.feed([(STDOUT, b"a\nb\nc"), (STDERR, b"x\r")]) == [(STDOUT, b"a\nb\n"), (STDERR, b"x\r")]
    assert lines.feed([(STDOUT, b"d")]) == []
    assert lines.feed([(STDOUT, b"\ne")]) == [(STDOUT, b"cd\n")]
    assert lines.rest() == [(STDOUT, b"e")] and lines.rest() == []


def test_a_long_or_old_unfinished_line_goes_through() -> None:
    clock = Clock()
    lines = WholeLines(clock)
    big = b"z" * wholelines.HOLD_BYTES
    assert lines.feed([(STDOUT, big)]) == [(STDOUT, big)]
    assert lines.feed([(STDOUT, b"waiting")]) == []
    clock.now += wholelines.HOLD_S / 2
    assert lines.feed([(STDERR, b"e")]) == []
    clock.now += wholelines.HOLD_S / 2  # the stdout line waited HOLD_S; the stderr one half that
    assert lines.feed([(STDERR, b"\n")]) == [(STDERR, b"e\n"), (STDOUT, b"waiting")]
    assert lines.rest() == []


def test_the_rest_comes_in_the_order_the_lines_began_and_every_byte_once() -> None:
    clock = Clock()
    lines = WholeLines(clock)
    got = lines.feed([(STDERR, b"first")])
    clock.now += 0.1
    got += lines.feed([(STDOUT, b"1\n2\nsecond")])
    got += lines.rest()
    assert got == [(STDOUT, b"1\n2\n"), (STDERR, b"first"), (STDOUT, b"second")]
