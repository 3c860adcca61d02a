"""What agents compute from an IKET or a Proton trace, per launch (times in the trace's unit: ns for IKET,
SM clock cycles for Proton; ``clock_mhz`` adds microseconds at that clock for cycles):

* ranges: duration stats (count, min, median, mean, max, total) per range name, split by warp role
  when the trace records roles (``group_by="auto"``), or by warp id (``"warp"``), or not (``"name"``);
* CTA spans: per CTA, first event to last event (warp lifetimes, ranges and markers), then
  min/median/mean/max over CTAs;
* periods: the steady-state period of a repeated marker: per (CTA, warp) the mean delta between
  consecutive occurrences (after ``skip`` warm-up occurrences), averaged per CTA, then stats over
  CTAs. A name with no markers falls back to the starts of the ranges of that name (a Proton trace has
  no markers: ``marker`` names the scope whose period is wanted).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from kcoral.profiling.iket_trace import Launch, Loc, Trace

GROUPINGS = ("auto", "role", "warp", "name")


def stats(values: Iterable[float]) -> dict[str, Any]:
    vals = sorted(values)
    if not vals:
        return {"count": 0, "min": None, "median": None, "mean": None, "max": None}
    return {
        "count": len(vals),
        "min": vals[0],
        "median": statistics.median(vals),
        "mean": statistics.fmean(vals),
        "max": vals[-1],
    }


def _role(loc: Loc | None, group_by: str) -> str | None:
    if loc is None or group_by == "name":
        return None
    if group_by == "warp":
        return f"warp{loc.warp}"
    return loc.role


def range_stats(launch: Launch, group_by: str = "auto") -> list[dict[str, Any]]:
    if group_by not in GROUPINGS:
        raise ValueError(f"group_by must be one of {GROUPINGS}")
    if group_by == "auto":
        group_by = "role" if launch.has_roles() else "name"
    groups: dict[tuple[str, str | None], list[int]] = defaultdict(list)
    for r in launch.ranges:
        groups[(r.name, _role(r.loc, group_by))].append(r.duration)
    out = []
    for (name, role), durations in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        out.append({"name": name, "role": role, **stats(durations), "total": sum(durations)})
    return out


def cta_spans(launch: Launch) -> dict[tuple[int, int, int], tuple[int, int]]:
    """Per CTA: (first event, last event)."""
    spans: dict[tuple[int, int, int], list[int]] = {}

    def see(loc: Loc | None, first: int, last: int) -> None:
        if loc is None:
            return
        span = spans.get(loc.cta)
        if span is None:
            spans[loc.cta] = [first, last]
        else:
            span[0] = min(span[0], first)
            span[1] = max(span[1], last)

    for w in launch.lifetimes:
        see(w.loc, w.start, w.end)
    for r in launch.ranges:
        see(r.loc, r.start, r.end)
    for m in launch.markers:
        see(m.loc, m.ts, m.ts)
    return {cta: (s[0], s[1]) for cta, s in spans.items()}


def period(launch: Launch, name: str, skip: int = 0) -> dict[str, Any] | None:
    """Steady-state period of ``name`` (markers, else range starts); None when it never repeats."""
    series: dict[tuple[tuple[int, int, int], int], list[int]] = defaultdict(list)
    source = "marker"
    for m in launch.markers:
        if m.name == name and m.loc is not None:
            series[(m.loc.cta, m.loc.warp)].append(m.ts)
    if not series:
        source = "range"
        for r in launch.ranges:
            if r.name == name and r.loc is not None:
                series[(r.loc.cta, r.loc.warp)].append(r.start)
    per_cta: dict[tuple[int, int, int], list[float]] = defaultdict(list)
    occurrences = 0
    for (cta, _warp), times in series.items():
        times = sorted(times)[skip:]
        if len(times) >= 2:
            per_cta[cta].append((times[-1] - times[0]) / (len(times) - 1))
            occurrences += len(times)
    if not per_cta:
        return None
    cta_means = [statistics.fmean(v) for v in per_cta.values()]
    return {
        "name": name,
        "source": source,
        "skip": skip,
        "occurrences": occurrences,
        "ctas": len(cta_means),
        **{k: v for k, v in stats(cta_means).items() if k != "count"},
    }


def repeated_names(launch: Launch) -> list[str]:
    """Marker names that occur more than once on some warp (candidates for a period)."""
    counts: dict[tuple[str, tuple[int, int, int], int], int] = defaultdict(int)
    for m in launch.markers:
        if m.loc is not None:
            counts[(m.name, m.loc.cta, m.loc.warp)] += 1
    return sorted({name for (name, _c, _w), n in counts.items() if n >= 2})


def summarize_launch(
    launch: Launch, marker: str | None = None, group_by: str = "auto", skip: int = 0
) -> dict[str, Any]:
    spans = cta_spans(launch)
    events = [t for s in spans.values() for t in s]
    names = [marker] if marker else repeated_names(launch)
    periods = [p for p in (period(launch, n, skip) for n in names) if p is not None]
    marker_counts: dict[str, int] = defaultdict(int)
    for m in launch.markers:
        marker_counts[m.name] += 1
    warps = {(w.loc.cta, w.loc.warp) for w in launch.lifetimes if w.loc is not None}
    return {
        "index": launch.index,
        "grid_id": launch.grid_id,
        "kernel": launch.kernel,
        "graph_key": launch.graph_key,
        "grid": list(launch.grid) if launch.grid else None,
        "block": list(launch.block) if launch.block else None,
        "counts": {
            "ranges": len(launch.ranges),
            "markers": len(launch.markers),
            "warp_lifetimes": len(launch.lifetimes),
            "warps": len(warps),
            "ctas": len(spans),
            "skipped_records": launch.skipped,
        },
        "span": {"start": min(events), "end": max(events), "duration": max(events) - min(events)} if events else None,
        "grouped_by": ("role" if launch.has_roles() else "name") if group_by == "auto" else group_by,
        "ranges": range_stats(launch, group_by),
        "cta_span": stats(e - s for s, e in spans.values()),
        "markers": dict(sorted(marker_counts.items())),
        "periods": periods,
    }


def summarize(
    trace: Trace,
    marker: str | None = None,
    group_by: str = "auto",
    skip: int = 0,
    kernel: str | None = None,
    clock_mhz: float | None = None,
) -> dict[str, Any]:
    """The summary document of a trace (``kernel``: keep launches whose name contains it; ``clock_mhz``: the
    SM clock that turns a Proton trace's cycles into time, given as ``clock_mhz`` in the document)."""
    launches = [la for la in trace.launches if kernel is None or kernel in la.kernel]
    doc: dict[str, Any] = {"source": trace.source, "shape": trace.shape, "units": trace.unit}
    if trace.unit == "cycles" and clock_mhz:
        doc["clock_mhz"] = clock_mhz
    doc["launches"] = [summarize_launch(la, marker, group_by, skip) for la in launches]
    return doc


class _Unit:
    """How a summary's times are printed: microseconds for ns, whole cycles for cycles."""

    def __init__(self, units: str) -> None:
        self.label = "cycles" if units == "cycles" else "us"

    def __call__(self, value: float | None) -> str:
        if value is None:
            return "-"
        return f"{value:.0f}" if self.label == "cycles" else f"{value / 1e3:.3f}"


def format_summary(doc: dict[str, Any]) -> list[str]:
    unit = _Unit(doc.get("units", "ns"))
    clock = doc.get("clock_mhz")
    lines: list[str] = []
    if unit.label == "cycles":
        at = f"; at {clock:g} MHz 1 us = {clock:g} cycles" if clock else " (--clock-mhz F adds microseconds at F MHz)"
        lines.append(f"times in SM clock cycles{at}")
    for la in doc["launches"]:
        span = la["span"]["duration"] if la["span"] else None
        grid_id = f" grid_id {la['grid_id']}" if la["grid_id"] is not None else ""
        where = f" graph {la['graph_key']}" if la["graph_key"] else ""
        dims = f"  grid {la['grid']} block {la['block']}" if la["grid"] or la["block"] else ""  # not in a .pftrace
        lines.append(
            f"launch {la['index']}{grid_id}{where}: {la['kernel']}{dims}"
            f"  span {unit(span)} {unit.label}  ({la['counts']['ctas']} CTAs, "
            f"{la['counts']['ranges']} ranges, {la['counts']['markers']} markers)"
        )
        cs = la["cta_span"]
        if cs["count"]:
            lines.append(
                f"  CTA span {unit.label}: min {unit(cs['min'])}  median {unit(cs['median'])}  max {unit(cs['max'])}"
            )
        name = "scope" if doc.get("shape") == "proton" else "range"
        u = "cyc" if unit.label == "cycles" else "us"
        extra = f" {'median us':>10}" if clock else ""
        if la["ranges"]:
            lines.append(
                f"  {name:<32} {'role':<12} {'count':>8} {'min ' + u:>10} {'median ' + u:>10} "
                f"{'mean ' + u:>10} {'max ' + u:>10}{extra}"
            )
        for r in la["ranges"]:
            at_clock = f" {r['median'] / clock:>10.3f}" if clock and r["median"] is not None else ""
            lines.append(
                f"  {r['name'][:32]:<32} {(r['role'] or '-')[:12]:<12} {r['count']:>8} {unit(r['min']):>10} "
                f"{unit(r['median']):>10} {unit(r['mean']):>10} {unit(r['max']):>10}{at_clock}"
            )
        for p in la["periods"]:
            lines.append(
                f"  period of {p['name']} ({p['source']}, {p['ctas']} CTAs): mean {unit(p['mean'])} {unit.label}  "
                f"median {unit(p['median'])}  min {unit(p['min'])}  max {unit(p['max'])}"
            )
    return lines
