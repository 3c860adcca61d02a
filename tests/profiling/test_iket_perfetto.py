"""Reading run-iket's Perfetto trace (.pftrace): the same records and summary as its JSON trace, and a
clear error (never a traceback) for a broken, hostile or foreign file.

The fixtures come from run-iket's own decoder (nvidia-cutlass-dsl 4.8.1, fixtures/make_pftrace.py):
h200_axpy.pftrace is the Perfetto trace of the records of h200_axpy_interned.json (a real H200 trace);
iket_features.pftrace and iket_features.trace.json come from one synthetic capture with payloads,
zero-length and overlapping ranges, ranges across warps and across CTAs, an SM missing from the
topology, a single-cluster launch and a CUDA graph launch of two kernels.
"""

from __future__ import annotations

import gzip
import io
import os
import random
import re
from pathlib import Path
from typing import Any

import pytest

from kcoral.cli.main import run
from kcoral.profiling import iket_perfetto
from kcoral.profiling.iket_load import from_bytes, load
from kcoral.profiling.iket_summary import GROUPINGS, format_summary, summarize
from kcoral.profiling.iket_trace import Loc, Trace, TraceError
from tests.profiling.conftest import FIXTURES
from tests.profiling.test_protowire import varint

AXPY = (FIXTURES / "h200_axpy_interned.json", FIXTURES / "h200_axpy.pftrace")
FEATURES = (FIXTURES / "iket_features.trace.json", FIXTURES / "iket_features.pftrace")
PAIRS = pytest.mark.parametrize("json_path, pftrace_path", [AXPY, FEATURES], ids=["h200_axpy", "features"])
NOT_IN_A_PFTRACE = ("grid", "block")


def records(trace: Trace) -> list[dict[str, Any]]:
    return [
        {
            "launch": (la.index, la.kernel, la.grid_id, la.graph_key, la.skipped),
            "ranges": sorted(((r.name, r.start, r.end, r.loc) for r in la.ranges), key=repr),
            "markers": sorted(((m.name, m.ts, m.loc, m.payload) for m in la.markers), key=repr),
            "lifetimes": sorted(((w.start, w.end, w.loc) for w in la.lifetimes), key=repr),
        }
        for la in trace.launches
    ]


def comparable(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [{k: v for k, v in la.items() if k not in NOT_IN_A_PFTRACE} for la in doc["launches"]]


@PAIRS
def test_same_records_as_the_json_trace(json_path: Path, pftrace_path: Path) -> None:
    from_json, from_pftrace = load(json_path), load(pftrace_path)
    assert from_pftrace.shape == "perfetto" and from_pftrace.source == str(pftrace_path)
    assert records(from_pftrace) == records(from_json)
    assert sum(len(la.ranges) + len(la.markers) for la in from_pftrace.launches) > 20
    assert all(la.grid is None and la.block is None for la in from_pftrace.launches)


@PAIRS
@pytest.mark.parametrize("group_by", GROUPINGS)
def test_same_summary_as_the_json_trace(json_path: Path, pftrace_path: Path, group_by: str) -> None:
    a = summarize(load(json_path), group_by=group_by)
    b = summarize(load(pftrace_path), group_by=group_by)
    assert (a["shape"], b["shape"]) == ("interned", "perfetto")
    assert comparable(b) == comparable(a) and len(a["launches"]) >= 1
    # the text differs only by the grid and block sizes a .pftrace does not hold
    assert format_summary(b) == [re.sub(r"  grid \[.*?\] block \[.*?\]", "", line) for line in format_summary(a)]


def test_decorations_are_taken_off_and_places_found() -> None:
    launches = load(FEATURES[1]).launches
    assert [(la.kernel, la.grid_id, la.graph_key) for la in launches] == [
        ("feat_kernel", 5, None),
        ("feat_kernel", 6, None),  # its slice says "kernel:feat_kernel [cluster (1,1,1) only], gridId: 6"
        ("node_kernel", 7, "graph_exec_0x7f3a:1"),  # the track is "GraphExec0x7f3a Launch1"
        ("node_kernel", 8, "graph_exec_0x7f3a:1"),
    ]
    first = launches[0]
    assert sorted({r.name for r in first.ranges}) == ["copy", "handoff", "mma", "stage", "sync", "wait"]
    # "copy(end_payload=0) [duration=0]", and two overlapping ones closed first in, first out
    assert sorted(r.duration for r in first.ranges if r.name == "copy") == [0, 96, 128]
    assert [m.payload for m in first.markers if m.name == "step"] == [5, 6]
    by_name = {r.name: r for r in first.ranges}
    assert by_name["sync"].loc == Loc((0, 0, 0), 0, 4)  # across warps: where it starts
    assert by_name["handoff"].loc == Loc((0, 0, 0), 0, 4) and by_name["handoff"].duration == 7 * 32
    assert {r.loc.sm for r in first.ranges if r.loc and r.loc.cta == (2, 0, 0)} == {9}  # not in the topology
    assert not [m for m in first.markers if ":" in m.name]  # a cross-warp range's ends are no markers


def test_told_apart_by_content_then_by_extension(tmp_path: Path) -> None:
    pftrace, json_text = FEATURES[1].read_bytes(), FEATURES[0].read_bytes()
    (tmp_path / "named.json").write_bytes(pftrace)
    assert load(tmp_path / "named.json").shape == "perfetto"
    (tmp_path / "named.pftrace").write_bytes(b"\n  " + json_text)
    assert load(tmp_path / "named.pftrace").shape == "interned"
    (tmp_path / "t.pftrace.gz").write_bytes(gzip.compress(pftrace))  # beside run-iket's HTML viewer
    assert records(load(tmp_path / "t.pftrace.gz")) == records(load(FEATURES[0]))
    assert load(io.BytesIO(pftrace)).shape == "perfetto"
    (tmp_path / "x.txt").write_bytes(b"hello")
    with pytest.raises(TraceError, match=r"neither an IKET JSON trace \(.trace.json\) nor a Perfetto trace"):
        load(tmp_path / "x.txt")
    (tmp_path / "empty.pftrace").write_bytes(b"")
    with pytest.raises(TraceError, match="empty file"):
        load(tmp_path / "empty.pftrace")
    (tmp_path / "other.pftrace").write_bytes(b"\x12\x00")  # protobuf, by its name, but no IKET track
    with pytest.raises(TraceError, match="not one of IKET's"):
        load(tmp_path / "other.pftrace")


# --- broken and hostile files ---------------------------------------------------------------------------


def ld(number: int, payload: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def vi(number: int, value: int) -> bytes:
    return varint(number << 3) + varint(value)


def track(uuid: int, name: str, parent: int | None = None) -> bytes:
    body = vi(1, uuid) + ld(2, name.encode()) + (vi(5, parent) if parent else b"")
    return ld(1, ld(60, body))


def event(ts: int, kind: int, uuid: int, name: str | None = None, iid: int | None = None, extra: bytes = b"") -> bytes:
    body = vi(9, kind) + vi(11, uuid) + (ld(23, name.encode()) if name else b"") + (vi(10, iid) if iid else b"")
    return ld(1, vi(8, ts) + vi(10, 1) + ld(11, body + extra))


def test_interned_names_and_ends_without_names() -> None:
    tree = ["Root", "Grid1", "GPC0", "TPC0|VSM3", "CTA(1, 2, 3)", "Warp05", "StackedRanges"]
    data = b"".join(track(i + 1, name, i or None) for i, name in enumerate(tree)) + track(8, "Marker", 6)
    interned = ld(1, vi(10, 1) + vi(13, 1) + ld(12, ld(2, vi(1, 1) + ld(2, b"tick"))))
    data += interned + event(100, 1, 2, "kernel:k, gridId: 4") + event(900, 2, 2, "kernel:k, gridId: 4")
    data += event(100, 1, 6, "Warp Life Time") + event(800, 2, 6)
    data += event(200, 1, 7, "outer") + event(300, 1, 7, "inner") + event(400, 2, 7) + event(500, 2, 7)
    data += event(250, 3, 8, iid=1) + event(950, 2, 7)  # an END with nothing open is skipped
    (la,) = iket_perfetto.from_bytes(data, "t.pftrace").launches
    loc = Loc((1, 2, 3), 5, 3)
    assert (la.kernel, la.grid_id, la.skipped) == ("k", 4, 1)
    assert [(r.name, r.start, r.end, r.loc) for r in la.ranges] == [("inner", 300, 400, loc), ("outer", 200, 500, loc)]
    assert [(m.name, m.ts) for m in la.markers] == [("tick", 250)] and la.lifetimes[0].end == 800


def test_hostile_names_are_only_names() -> None:
    huge = "9" * 5000  # int() of it would raise
    tree = ["Root", f"Grid{huge}", "GPC0", f"TPC0|VSM{huge}", f"CTA({huge}, 0, 0)", f"Warp{huge}", "r"]
    data = b"".join(track(i + 1, name, i or None) for i, name in enumerate(tree))
    data += event(1, 1, 7, "r") + event(2, 2, 7, "r") + event(1, 1, 2, f"kernel:k, gridId: {huge}")
    trace = iket_perfetto.from_bytes(data, "t.pftrace")
    assert trace.launches == []  # no GridK track: nothing placed, nothing raised


@pytest.mark.parametrize(
    "data, message",
    [
        (b"\x0a\x0d\xe2\x03", "13 bytes announced, 2 left at byte 0"),  # the start of a real trace
        (b"\x0a\xff\xff\xff\xff\x0f" + b"x" * 10, "bytes announced"),
        (b"\x0a\x01\x08", "truncated varint"),
        (b"\x0a" + b"\x80" * 12, "varint longer than 10 bytes"),
        (b"\x0a\x01\x0b", "unsupported wire type 3"),
        (track(1, "Root") + track(2, "a", 3) + track(3, "b", 2), "parents form a cycle"),
        (b"".join(track(i + 1, f"t{i}", i or None) for i in range(80)), "nested deeper than 64 tracks"),
    ],
)
def test_broken_traces_give_clear_errors(data: bytes, message: str) -> None:
    with pytest.raises(TraceError, match=f"x.pftrace: not a valid Perfetto trace: .*{re.escape(message)}"):
        from_bytes(data, "x.pftrace")


def test_truncated_real_trace() -> None:
    data = AXPY[1].read_bytes()
    with pytest.raises(TraceError, match="not a valid Perfetto trace"):
        from_bytes(data[:-1], "cut.pftrace")


def test_size_limits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(iket_perfetto, "MAX_TRACE_BYTES", 4096)
    with pytest.raises(TraceError, match="larger than 4096 bytes"):
        load(AXPY[1])  # 18 kB
    (tmp_path / "bomb.pftrace.gz").write_bytes(gzip.compress(b"\x0a\x00" * 100_000))
    with pytest.raises(TraceError, match="unzips to more than"):
        load(tmp_path / "bomb.pftrace.gz")
    (tmp_path / "bad.gz").write_bytes(b"\x1f\x8bnot gzip at all")
    with pytest.raises(TraceError, match="a broken gzip file"):
        load(tmp_path / "bad.gz")


def test_only_regular_files_are_read(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="not a regular file"):
        load(tmp_path)
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "fifo.pftrace")
        with pytest.raises(TraceError, match="not a regular file"):  # and no hang waiting for a writer
            load(tmp_path / "fifo.pftrace")


def test_mutated_traces_fail_only_as_trace_errors() -> None:
    rng = random.Random(14)
    original = FEATURES[1].read_bytes()
    failures = 0
    for _ in range(300):
        data = bytearray(original)
        for _ in range(rng.randint(1, 6)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        if rng.random() < 0.3:
            del data[rng.randrange(len(data)) :]
        try:
            from_bytes(bytes(data), "m.pftrace")
        except TraceError:
            failures += 1
    assert 0 < failures < 300


# --- the CLI --------------------------------------------------------------------------------------------


def test_cli_summarize_and_plot_read_the_pftrace(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    json_path, pftrace_path = AXPY
    assert run(["iket", "summarize", str(pftrace_path), "--marker", "tile"]) == 0
    from_pftrace = capfd.readouterr().out
    assert run(["iket", "summarize", str(json_path), "--marker", "tile"]) == 0
    from_json = capfd.readouterr().out
    assert "period of tile (marker, 3 CTAs)" in from_pftrace and "kernel_cutlass_axpy_kernel" in from_pftrace
    assert from_pftrace == re.sub(r"  grid \[.*?\] block \[.*?\]", "", from_json)
    pytest.importorskip("matplotlib")
    assert run(["iket", "plot", str(pftrace_path), "-o", str(tmp_path / "t.png")]) == 0
    assert (tmp_path / "t.png").read_bytes()[:4] == b"\x89PNG"


def test_cli_summary_shows_the_jobs_names_escaped(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """A range named with terminal escapes (hidden text, a window title: the names are the job's) is
    printed as \\x1b..., not obeyed; the same names through both trace shapes."""
    json_path, pftrace_path = AXPY
    esc = {json_path: b"\\u001b", pftrace_path: b"\x1b"}  # JSON text carries it escaped; protobuf raw
    for source in (json_path, pftrace_path):
        hostile = tmp_path / source.name
        data = source.read_bytes().replace(b"work", esc[source] + b"[8m")
        hostile.write_bytes(data.replace(b"load", esc[source] + b"]0;"))
        assert run(["iket", "summarize", str(hostile)]) == 0
        out = capfd.readouterr().out
        assert "\x1b" not in out and "\x07" not in out
        assert "\\x1b[8m" in out and "\\x1b]0;" in out


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("bad.pftrace", b"\x0a\x0d\xe2\x03", "not a valid Perfetto trace"),
        ("bad.pftrace", b"GIF89a", "unsupported wire type 7"),
        ("bad.png", b"GIF89a", "neither an IKET JSON trace"),
        ("bad.pftrace.gz", b"\x1f\x8b\x08\x00junk", "a broken gzip file"),
        ("bad.trace.json", b'{"launches": [' * 100_000, "JSON nested too deep"),
    ],
)
def test_cli_bad_files_exit_2_without_a_traceback(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], name: str, content: bytes, message: str
) -> None:
    bad = tmp_path / name
    bad.write_bytes(content)
    for tool in (["summarize"], ["plot", "-o", str(tmp_path / "x.png")]):
        assert run(["iket", *tool, str(bad)]) == 2
        captured = capfd.readouterr()
        assert message in captured.err and "Traceback" not in captured.err + captured.out
