"""Reading IKET JSON traces in both shapes (profiling.iket_trace)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from kcoral.profiling.iket_load import load
from kcoral.profiling.iket_trace import TraceError, from_document
from tests.profiling.conftest import FIXTURES


def test_both_shapes_read_the_same(trace_path: Path) -> None:
    trace = load(trace_path)
    assert trace.shape == ("interned" if "interned" in trace_path.name else "plain")
    assert [la.kernel for la in trace.launches] == ["gemm_kernel", "other_kernel"]
    main, graph = trace.launches
    assert (main.grid_id, main.grid, main.block, main.graph_key) == (7, (2, 1, 1), (64, 1, 1), None)
    assert (graph.grid_id, graph.graph_key) == (8, "graph_exec_1:0")
    assert (len(main.ranges), len(main.markers), len(main.lifetimes), main.skipped) == (5, 5, 4, 0)
    assert sorted({r.name for r in main.ranges}) == ["load", "mma"]
    first = main.ranges[0]
    assert (first.name, first.start, first.end, first.duration) == ("load", 1100, 1200, 100)
    assert (first.loc.cta, first.loc.warp, first.loc.sm) == ((0, 0, 0), 0, 0)
    assert [m.ts for m in main.markers if m.name == "tick"] == [1100, 1300, 1500, 1150, 1400]
    assert {(w.loc.cta, w.loc.warp) for w in main.lifetimes} == {
        ((0, 0, 0), 0),
        ((0, 0, 0), 1),
        ((1, 0, 0), 0),
        ((1, 0, 0), 1),
    }
    assert graph.ranges[0].name == "x"


def test_same_records_in_both_shapes() -> None:
    plain = load(FIXTURES / "trace_plain.json")
    interned = load(FIXTURES / "trace_interned.json")
    for a, b in zip(plain.launches, interned.launches, strict=True):
        assert a.ranges == b.ranges and a.lifetimes == b.lifetimes
        assert [(m.name, m.ts, m.loc) for m in a.markers] == [(m.name, m.ts, m.loc) for m in b.markers]


def test_open_file_and_bad_records_are_skipped() -> None:
    doc = {
        "stringTable": ["r"],
        "locationTable": [{"ctaId": [0, 0, 0], "warpId": 3}],
        "launches": [
            {
                "gridId": 1,
                "kernelName": "k",
                "ranges": [
                    {"rangeNameIdx": 0, "startTs": 1, "endTs": 5, "warpLocIdxs": [0]},
                    {"rangeNameIdx": 0, "startTs": 1},
                    "junk",
                    {"rangeNameIdx": 9, "startTs": 2, "endTs": 3, "warpLocIdxs": [7]},
                ],
                "markers": [{"markerNameIdx": 0, "locIdx": 0}],
                "warpLifetimes": [{"locIdx": 0, "startTs": 0, "endTs": 10}],
            }
        ],
    }
    trace = load(io.StringIO(json.dumps(doc)))
    la = trace.launches[0]
    assert la.skipped == 3
    assert [(r.name, r.duration, r.loc) for r in la.ranges][1] == ("#9", 1, None)
    assert la.ranges[0].loc.warp == 3 and la.grid is None


def test_not_a_trace(tmp_path: Path) -> None:
    with pytest.raises(TraceError):
        from_document({"foo": 1})
    bad = tmp_path / "x.json"
    bad.write_text("{not json")
    with pytest.raises(TraceError, match="not JSON"):
        load(bad)
