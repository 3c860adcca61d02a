"""A job's log keeps which stream each byte came from, read back from any offset."""

from __future__ import annotations

import errno
import threading
from pathlib import Path

import pytest

from kcoral.protocol.framing import MIXED, SERVER, STDERR, STDOUT, FrameReader, Piece, frame
from kcoral.runner import joblog
from kcoral.runner.joblog import LogWriter, read_pieces
from tests.conftest import mounted_tmpfs

WRITES = [(STDOUT, b"hello "), (STDOUT, b"world\n"), (STDERR, b"oops\n"), (STDOUT, b"more\n"), (STDERR, b"!")]


def _streams_of(pieces: list[Piece]) -> list[int]:
    return [s for p in pieces for s in [p.stream] * len(p.data)]


def test_every_offset_and_length_reads_back_the_bytes_with_their_streams(tmp_path: Path) -> None:
    path = tmp_path / "log"
    with LogWriter(path) as log:
        for stream, data in WRITES:
            log.append(stream, data)
    data = b"".join(d for _, d in WRITES)
    streams = [s for s, d in WRITES for _ in d]
    assert path.read_bytes() == data
    for offset in range(len(data) + 2):
        for limit in (1, 3, 7, 100):
            pieces = read_pieces(path, offset, limit)
            assert b"".join(p.data for p in pieces) == data[offset : offset + limit]
            assert _streams_of(pieces) == streams[offset : offset + limit]
            assert all(p.data for p in pieces)  # no empty pieces
    # a piece per change of stream, not per write
    assert [p.stream for p in read_pieces(path, 0, 100)] == [STDOUT, STDERR, STDOUT, STDERR]


def test_a_writer_opened_again_goes_on_with_the_same_stream(tmp_path: Path) -> None:
    path = tmp_path / "log"
    with LogWriter(path) as log:
        log.append(STDERR, b"a")
    with LogWriter(path) as log:
        log.append(STDERR, b"b")
        log.append(STDOUT, b"c")
    assert read_pieces(path, 0, 10) == [Piece(STDERR, b"ab"), Piece(STDOUT, b"c")]


def test_a_log_without_streams_is_stdout_and_a_missing_log_is_empty(tmp_path: Path) -> None:
    (tmp_path / "log").write_bytes(b"from before\n")
    assert read_pieces(tmp_path / "log", 5, 100) == [Piece(STDOUT, b"before\n")]
    assert read_pieces(tmp_path / "none", 0, 100) == []


def test_past_the_switch_limit_the_rest_is_marked_mixed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(joblog, "MAX_SWITCHES", 4)
    path = tmp_path / "log"
    with LogWriter(path) as log:
        for i in range(10):
            log.append(STDOUT if i % 2 == 0 else STDERR, bytes([65 + i]))
    assert read_pieces(path, 0, 100) == [
        Piece(STDOUT, b"A"), Piece(STDERR, b"B"), Piece(STDOUT, b"C"), Piece(STDERR, b"D"), Piece(MIXED, b"EFGHIJ"),
    ]  # fmt: skip
    assert joblog.streams_path(path).stat().st_size == 5 * 9  # the index stops growing


def test_the_servers_lines_keep_their_stream_even_past_the_switch_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job that switched streams until its log went MIXED cannot make the server's lines (an evaluation's
    report, written after it) its own: they keep stream SERVER, and frames carry it."""
    monkeypatch.setattr(joblog, "MAX_SWITCHES", 2)
    path = tmp_path / "log"
    with LogWriter(path) as log:
        log.extend([(STDOUT, b"a"), (STDERR, b"b"), (STDOUT, b"passed: 7/7\n")])
        log.append(SERVER, b"passed: 0/7\n")
    assert read_pieces(path, 0, 100) == [
        Piece(STDOUT, b"a"), Piece(STDERR, b"b"), Piece(MIXED, b"passed: 7/7\n"), Piece(SERVER, b"passed: 0/7\n"),
    ]  # fmt: skip
    assert FrameReader().feed(frame(Piece(SERVER, b"x\n"))) == [Piece(SERVER, b"x\n")]


def test_writers_on_many_threads_keep_each_piece_whole(tmp_path: Path) -> None:
    path = tmp_path / "log"
    with LogWriter(path) as log:

        def write(stream: int, mark: bytes) -> None:
            for _ in range(300):
                log.append(stream, mark * 50)

        threads = [threading.Thread(target=write, args=(s, m)) for s, m in ((STDOUT, b"o"), (STDERR, b"e"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    pieces = read_pieces(path, 0, 1 << 20)
    assert all(set(p.data) == {ord("o" if p.stream == STDOUT else "e")} for p in pieces)
    assert sum(len(p.data) for p in pieces) == 2 * 300 * 50


def test_frames_survive_any_chunking() -> None:
    pieces = [Piece(STDOUT, b"x" * 70000), Piece(STDERR, b"err\n"), Piece(STDOUT, b"\x00\x01")]
    stream = b"".join(frame(p) for p in pieces)
    for size in (1, 7, 8, 9, 4096):
        reader = FrameReader()
        got = [p for i in range(0, len(stream), size) for p in reader.feed(stream[i : i + size])]
        assert got == pieces


def test_bytes_that_are_not_frames_are_refused() -> None:
    with pytest.raises(ValueError, match="not a log frame"):
        FrameReader().feed(b"hello world")


def test_a_record_whose_bytes_never_came_is_harmless(tmp_path: Path) -> None:
    """A server killed between an index record and its data leaves a record at the log's end."""
    path = tmp_path / "log"
    with LogWriter(path) as log:
        log.append(STDOUT, b"out")
    with open(joblog.streams_path(path), "ab") as index:  # the record of a stderr write that never landed
        index.write(joblog._RECORD.pack(STDERR, 3))
    assert read_pieces(path, 0, 100) == [Piece(STDOUT, b"out")]
    with LogWriter(path) as log:  # the next server goes on from there, in either stream
        log.append(STDOUT, b"!")
        log.append(STDERR, b"err")
    assert read_pieces(path, 0, 100) == [Piece(STDOUT, b"out!"), Piece(STDERR, b"err")]
    assert read_pieces(path, 3, 2) == [Piece(STDOUT, b"!"), Piece(STDERR, b"e")]


def test_the_index_a_job_can_force_is_small_beside_its_log_budget() -> None:
    """The index is not charged to the log budget: the most a job can make it grow stays small."""
    from kcoral.runner.limits import Limits

    assert Limits().log_bytes // 16 >= (joblog.MAX_SWITCHES + 1) * 9


def test_a_batch_reads_back_as_its_pieces_would_and_the_switch_limit_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(joblog, "MAX_SWITCHES", 4)
    batches = [[(STDOUT, b"A"), (STDOUT, b""), (STDERR, b"B")], [(STDERR, b"C"), (STDOUT, b"D")], [(STDERR, b"E")]]
    with LogWriter(tmp_path / "one") as one, LogWriter(tmp_path / "many") as many:
        for batch in [*batches, [(STDOUT, b"F"), (STDERR, b"G")]]:
            one.extend(batch)
            for stream, data in batch:
                many.append(stream, data)
        assert one.size == many.size == 7
    for name in ("one", "many"):
        assert read_pieces(tmp_path / name, 0, 100) == [
            Piece(STDOUT, b"A"), Piece(STDERR, b"BC"), Piece(STDOUT, b"D"), Piece(STDERR, b"E"), Piece(MIXED, b"FG"),
        ]  # fmt: skip
    assert joblog.streams_path(tmp_path / "one").read_bytes() == joblog.streams_path(tmp_path / "many").read_bytes()


def test_a_batch_that_does_not_fit_leaves_a_log_that_reads_back_as_far_as_it_got(tmp_path: Path) -> None:
    """A full disk in the middle of a batch: no index record past the log's end, and the writer
    (and a new one) go on from what is there once there is room."""
    with mounted_tmpfs(tmp_path / "disk", 1) as disk:
        path, filler = disk / "log", disk / "filler"
        filler.write_bytes(b"\0" * (64 << 10))
        batch = [(STDOUT if i % 2 else STDERR, bytes([65 + i % 26]) * 3000) for i in range(400)]  # 1.2 MB
        with LogWriter(path) as log:
            with pytest.raises(OSError) as info:
                log.extend(batch)
            assert info.value.errno == errno.ENOSPC
            size = path.stat().st_size
            assert 0 < size < 1 << 20 and log.size == size
            pieces = read_pieces(path, 0, 2 << 20)
            assert b"".join(p.data for p in pieces) == path.read_bytes()
            assert pieces == [Piece(s, d) for s, d in batch[: len(pieces)]][:-1] + [pieces[-1]]
            filler.unlink()
            log.extend([(batch[len(pieces) - 1][0], b"after")])
        pieces = read_pieces(path, 0, 2 << 20)
        assert b"".join(p.data for p in pieces) == path.read_bytes()
        assert pieces[-1].data.endswith(b"after") and pieces[-1].stream == batch[len(pieces) - 1][0]


def test_the_writer_says_when_the_log_grew_and_only_then(tmp_path: Path) -> None:
    """``on_append`` (the server wakes the log's followers with it) after each append or batch that wrote
    bytes, never for an empty one; the bytes are in the log when it is called."""
    seen: list[int] = []
    path = tmp_path / "log"
    with LogWriter(path, on_append=lambda: seen.append(path.stat().st_size)) as w:
        w.append(STDOUT, b"ab")
        w.append(STDOUT, b"")
        w.extend([(STDERR, b"c"), (STDOUT, b"de")])
        w.extend([(STDOUT, b"")])
    assert seen == [2, 5]
