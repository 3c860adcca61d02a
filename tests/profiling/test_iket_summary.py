"""Summary numbers on the synthetic traces, checked by hand (profiling.iket_summary)."""

from __future__ import annotations

from pathlib import Path

from kcoral.profiling.iket_load import load
from kcoral.profiling.iket_summary import format_summary, period, range_stats, summarize
from kcoral.profiling.iket_trace import from_document

# The fixture: 2 CTAs x 2 warps of gemm_kernel.
#   CTA 0: warp 0 lives 1000-2000, load 1100-1200 and 1300-1450, tick at 1100 1300 1500
#          warp 1 lives 1000-2100, mma 1200-1500
#   CTA 1: warp 0 lives 1050-1900, load 1150-1350, tick at 1150 1400
#          warp 1 lives 1050-1800, mma 1400-1600


def test_numbers(trace_path: Path) -> None:
    doc = summarize(load(trace_path), kernel="gemm")
    assert len(doc["launches"]) == 1
    la = doc["launches"][0]
    assert la["grid_id"] == 7 and la["grid"] == [2, 1, 1]
    assert la["counts"] == {"ranges": 5, "markers": 5, "warp_lifetimes": 4, "warps": 4, "ctas": 2, "skipped_records": 0}
    assert la["span"] == {"start": 1000, "end": 2100, "duration": 1100}
    assert la["grouped_by"] == "name"
    assert la["ranges"] == [
        {"name": "load", "role": None, "count": 3, "min": 100, "median": 150, "mean": 150.0, "max": 200, "total": 450},
        {"name": "mma", "role": None, "count": 2, "min": 200, "median": 250.0, "mean": 250.0, "max": 300, "total": 500},
    ]
    # CTA 0: 1000..2100 = 1100; CTA 1: 1050..1900 = 850
    assert la["cta_span"] == {"count": 2, "min": 850, "median": 975.0, "mean": 975.0, "max": 1100}
    assert la["markers"] == {"tick": 5}
    # tick: CTA 0 (1500-1100)/2 = 200, CTA 1 (1400-1150)/1 = 250
    assert la["periods"] == [
        {
            "name": "tick",
            "source": "marker",
            "skip": 0,
            "occurrences": 5,
            "ctas": 2,
            "min": 200.0,
            "median": 225.0,
            "mean": 225.0,
            "max": 250.0,
        }
    ]


def test_period_options(trace_path: Path) -> None:
    la = load(trace_path).launches[0]
    skipped = period(la, "tick", skip=1)  # CTA 0: 1300, 1500 -> 200; CTA 1 keeps one tick only
    assert (skipped["ctas"], skipped["mean"]) == (1, 200.0)
    starts = period(la, "load")  # no marker of that name: range starts, CTA 0 warp 0 1100 -> 1300
    assert (starts["source"], starts["ctas"], starts["mean"]) == ("range", 1, 200.0)
    assert period(la, "mma") is None
    assert period(la, "nothing") is None
    assert summarize(load(trace_path), marker="load")["launches"][0]["periods"][0]["name"] == "load"


def test_group_by_warp(trace_path: Path) -> None:
    rows = range_stats(load(trace_path).launches[0], "warp")
    assert [(r["name"], r["role"], r["count"]) for r in rows] == [("load", "warp0", 3), ("mma", "warp1", 2)]


def test_group_by_role_when_recorded() -> None:
    locs = [
        {"ctaId": [0, 0, 0], "warpId": 0, "warpRole": "producer"},
        {"ctaId": [0, 0, 0], "warpId": 1, "warpRoleIdx": 2},
    ]
    doc = {
        "stringTable": ["wait", "issue", "consumer"],
        "locationTable": locs,
        "launches": [
            {
                "gridId": 1,
                "kernelName": "k",
                "ranges": [
                    {"rangeNameIdx": 0, "startTs": 0, "endTs": 64, "warpLocIdxs": [0, 0]},
                    {"rangeNameIdx": 0, "startTs": 100, "endTs": 132, "warpLocIdxs": [1, 1]},
                    {"rangeNameIdx": 0, "startTs": 200, "endTs": 296, "warpLocIdxs": [1, 1]},
                    {"rangeNameIdx": 1, "startTs": 10, "endTs": 42, "warpLocIdxs": [0, 0]},
                ],
            }
        ],
    }
    la = summarize(from_document(doc))["launches"][0]
    assert la["grouped_by"] == "role"
    assert [(r["name"], r["role"], r["count"], r["mean"]) for r in la["ranges"]] == [
        ("issue", "producer", 1, 32.0),
        ("wait", "consumer", 2, 64.0),
        ("wait", "producer", 1, 64.0),
    ]
    assert la["cta_span"]["max"] == 296 and la["periods"] == []


def test_text_lines(trace_path: Path) -> None:
    text = "\n".join(format_summary(summarize(load(trace_path))))
    assert "gemm_kernel" in text and "graph graph_exec_1:0" in text
    assert "CTA span us: min 0.850  median 0.975  max 1.100" in text
    assert "period of tick (marker, 2 CTAs): mean 0.225 us" in text
