"""Trace reading and summaries on fixtures cut from a real H200 trace (fixtures/cut_trace.py).

examples/iket_capture/capture.py: 264 CTAs of 4 warps, 16 tiles each; warp 0 pushes "load" per
tile, warps 1-3 push "work", every warp pushes "cta" around its loop and marks "tile" at each step.
The fixtures keep CTAs 0-2. Expected numbers are computed here from the raw JSON, independently of
profiling.iket_summary.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path

import pytest

from kcoral.profiling.iket_load import load
from kcoral.profiling.iket_summary import format_summary, summarize
from tests.profiling.conftest import FIXTURES

INTERNED = FIXTURES / "h200_axpy_interned.json"
PLAIN = FIXTURES / "h200_axpy_plain.json"
TILES = 16


@pytest.fixture(scope="module")
def raw() -> dict:
    return json.loads(INTERNED.read_text())


def test_both_shapes_hold_the_same_records() -> None:
    interned, plain = load(INTERNED), load(PLAIN)
    assert (interned.shape, plain.shape) == ("interned", "plain")
    a, b = interned.launches[0], plain.launches[0]
    assert a.ranges == b.ranges and a.lifetimes == b.lifetimes
    assert [(m.name, m.ts, m.loc) for m in a.markers] == [(m.name, m.ts, m.loc) for m in b.markers]


def test_program_structure_is_what_the_kernel_does() -> None:
    la = load(INTERNED).launches[0]
    assert la.kernel.startswith("kernel_cutlass_axpy_kernel")
    assert (la.grid, la.block, la.skipped) == ((264, 1, 1), (128, 1, 1), 0)
    per_warp: dict[tuple[tuple[int, int, int], int], list[str]] = defaultdict(list)
    for r in la.ranges:
        per_warp[(r.loc.cta, r.loc.warp)].append(r.name)
    assert len(per_warp) == 12
    for (_cta, warp), names in per_warp.items():
        inner = "load" if warp == 0 else "work"
        assert sorted(names) == sorted(["cta"] + [inner] * TILES)
    assert all(m.name == "tile" for m in la.markers) and len(la.markers) == 12 * TILES
    assert all(r.end >= r.start and r.duration % 32 == 0 for r in la.ranges)  # 32 ns timer steps


def test_cta_spans_and_tile_period_match_the_raw_json(raw: dict) -> None:
    locs, launch = raw["locationTable"], raw["launches"][0]
    first: dict[int, int] = {}
    last: dict[int, int] = {}

    def see(idx: int, start: int, end: int) -> None:
        cta = locs[idx]["ctaId"][0]
        first[cta] = min(first.get(cta, start), start)
        last[cta] = max(last.get(cta, end), end)

    for w in launch["warpLifetimes"]:
        see(w["locIdx"], w["startTs"], w["endTs"])
    for r in launch["ranges"]:
        see(r["warpLocIdxs"][0], r["startTs"], r["endTs"])
    for m in launch["markers"]:
        see(m["locIdx"], m["timestamp"], m["timestamp"])
    spans = sorted(last[c] - first[c] for c in first)

    ticks: dict[tuple[int, int], list[int]] = defaultdict(list)
    for m in launch["markers"]:
        loc = locs[m["locIdx"]]
        ticks[(loc["ctaId"][0], loc["warpId"])].append(m["timestamp"])
    per_cta: dict[int, list[float]] = defaultdict(list)
    for (cta, _warp), ts in ticks.items():
        ts.sort()
        per_cta[cta].append((ts[-1] - ts[0]) / (len(ts) - 1))
    cta_periods = [statistics.fmean(v) for v in per_cta.values()]

    doc = summarize(load(PLAIN), marker="tile")["launches"][0]
    assert doc["counts"]["ctas"] == 3 and doc["counts"]["ranges"] == 3 * 4 * (TILES + 1)
    assert (doc["cta_span"]["min"], doc["cta_span"]["median"], doc["cta_span"]["max"]) == (
        spans[0],
        statistics.median(spans),
        spans[-1],
    )
    tile = doc["periods"][0]
    assert (tile["name"], tile["source"], tile["ctas"], tile["occurrences"]) == ("tile", "marker", 3, 12 * TILES)
    assert tile["mean"] == pytest.approx(statistics.fmean(cta_periods))
    assert tile["min"] == pytest.approx(min(cta_periods)) and tile["max"] == pytest.approx(max(cta_periods))
    # A tile takes a fraction of a microsecond on this kernel: the numbers are in ns, not us or cycles.
    assert 50 < tile["mean"] < 2000


def test_text_summary_of_the_real_trace() -> None:
    text = "\n".join(format_summary(summarize(load(INTERNED), marker="tile")))
    assert "(3 CTAs, 204 ranges, 192 markers)" in text
    assert "period of tile (marker, 3 CTAs)" in text
    for name in ("cta", "load", "work"):
        assert f"\n  {name} " in text


def test_plot_of_the_real_trace(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from kcoral.profiling.timeline import plot

    out = plot(INTERNED, tmp_path / "timeline.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10000
