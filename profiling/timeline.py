"""A per-CTA / per-warp timeline of an IKET or a Proton launch as a PNG (matplotlib, imported lazily).

    from kcoral.profiling.timeline import plot
    plot("iket_pid_0x1234.trace.json", "timeline.png")       # or the .pftrace

One row per (CTA, warp), ranges as bars coloured by name, markers as ticks, warp lifetimes as a
thin grey bar behind. Large launches are cut to the first ``max_ctas`` CTAs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from kcoral.profiling.iket_load import load
from kcoral.profiling.iket_trace import Launch, Trace
from kcoral.protocol.install import install_hint


class PlotUnavailable(RuntimeError):
    """matplotlib is not installed."""


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend (PlotUnavailable without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise PlotUnavailable(
            f"plotting needs matplotlib: {install_hint('plot')} (or pip install matplotlib)"
        ) from None
    return plt


def _pick(trace: Trace, launch: int | None, kernel: str | None) -> Launch:
    launches = [la for la in trace.launches if kernel is None or kernel in la.kernel]
    if not launches:
        raise ValueError("the trace has no launch" + (f" of a kernel matching {kernel!r}" if kernel else ""))
    if launch is None:
        return max(launches, key=lambda la: len(la.ranges) + len(la.markers))
    for la in launches:
        if la.index == launch:
            return la
    raise ValueError(f"no launch {launch} (there are {len(trace.launches)})")


def _rows(la: Launch, max_ctas: int, max_rows: int) -> list[tuple[tuple[int, int, int], int]]:
    """The plot's rows: (CTA, warp) of the launch's events, the first ``max_ctas`` CTAs' warps, in order,
    at most ``max_rows``."""
    keys = {
        loc
        for loc in (*(r.loc for r in la.ranges), *(m.loc for m in la.markers), *(w.loc for w in la.lifetimes))
        if loc is not None
    }
    ctas = set(sorted({k.cta for k in keys})[:max_ctas])
    return sorted({(k.cta, k.warp) for k in keys if k.cta in ctas})[:max_rows]


def plot(
    trace: Trace | str | os.PathLike[str],
    out_png: str | os.PathLike[str],
    launch: int | None = None,
    kernel: str | None = None,
    max_ctas: int = 8,
    max_rows: int = 256,
) -> Path:
    """Draw the timeline of one launch (default: the one with the most events) into ``out_png``."""
    plt = pyplot()
    if not isinstance(trace, Trace):
        trace = load(trace)
    la = _pick(trace, launch, kernel)
    rows = _rows(la, max_ctas, max_rows)
    row_of = {key: i for i, key in enumerate(rows)}
    times = (
        [t for r in la.ranges for t in (r.start, r.end)]
        + [m.ts for m in la.markers]
        + [t for w in la.lifetimes for t in (w.start, w.end)]
    )
    t0 = min(times) if times else 0
    scale, unit = (1.0, "cycles") if trace.unit == "cycles" else (1e3, "us")
    names = sorted({r.name for r in la.ranges})
    cmap = plt.get_cmap("tab20")
    colour = {n: cmap(i % 20) for i, n in enumerate(names)}

    fig, ax = plt.subplots(figsize=(14, max(3.0, 0.28 * len(rows) + 1.5)))
    for w in la.lifetimes:
        row = row_of.get((w.loc.cta, w.loc.warp)) if w.loc else None
        if row is not None:
            ax.broken_barh([((w.start - t0) / scale, (w.end - w.start) / scale)], (row - 0.05, 0.1), color="0.8")
    for r in la.ranges:
        row = row_of.get((r.loc.cta, r.loc.warp)) if r.loc else None
        if row is not None:
            ax.broken_barh(
                [((r.start - t0) / scale, max(r.end - r.start, 1) / scale)],
                (row - 0.35, 0.7),
                color=colour[r.name],
                alpha=0.8,
            )
    xs = [(m.ts - t0) / scale for m in la.markers if m.loc and (m.loc.cta, m.loc.warp) in row_of]
    ys = [row_of[(m.loc.cta, m.loc.warp)] for m in la.markers if m.loc and (m.loc.cta, m.loc.warp) in row_of]
    if xs:
        ax.scatter(xs, ys, marker="|", color="black", s=60, linewidths=1, zorder=3, label="markers")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"cta {c[0]},{c[1]},{c[2]} w{w}" for c, w in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel(f"{'SM clock cycles' if unit == 'cycles' else 'time'} since first event ({unit})")
    grid_id = f", grid_id {la.grid_id}" if la.grid_id is not None else ""
    ax.set_title(f"{la.kernel[:80]} (launch {la.index}{grid_id})", fontsize=9)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colour[n]) for n in names[:20]]
    if handles:
        ax.legend(handles, names[:20], fontsize=7, loc="upper right", ncol=2)
    return save(plt, fig, out_png)


def save(plt: Any, fig: Any, out_png: str | os.PathLike[str]) -> Path:
    """Write ``fig`` as a PNG (its folder made) and close it."""
    fig.tight_layout()
    out = Path(out_png)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
