"""A timeline's GPU activity as a PNG (matplotlib, imported lazily): one row per stream, kernels as bars
coloured by name (the ten busiest names; the others grey), copies, memsets and synchronisations in their
own colours, and below them one row per launching thread with its synchronising calls.

    from kcoral.profiling.gputrace_plot import plot
    plot("timeline.trace.json", "timeline.png")
"""

from __future__ import annotations

import os
from pathlib import Path

from kcoral.profiling.gputrace_load import HOST_SYNC_NAMES, Timeline, load
from kcoral.profiling.gputrace_summary import kernel_label, short, top_kernels
from kcoral.profiling.timeline import pyplot, save

#: the colours of what is not a kernel (none of them among tab10's, the kernels')
OTHER = {"memcpy": "gold", "memset": "magenta", "sync": "black"}


def plot(trace: Timeline | str | os.PathLike[str], out_png: str | os.PathLike[str], top: int = 10) -> Path:
    """Draw ``trace`` (a Timeline or its file) into ``out_png``; ValueError when it has no GPU activity."""
    plt = pyplot()
    tl = trace if isinstance(trace, Timeline) else load(trace)
    if not tl.ops:
        raise ValueError(f"{tl.source or 'the trace'}: no GPU activity to draw")
    t0 = tl.ops[0].start
    streams = sorted({(str(o.device), str(o.stream)) for o in tl.ops})
    syncs = [c for c in tl.calls if any(s in c.name for s in HOST_SYNC_NAMES)]
    threads = sorted({str(c.tid) for c in syncs})
    rows = [f"device {d} stream {short(s, 20)}" for d, s in streams] + [f"thread {short(t, 20)} syncs" for t in threads]
    row_of = {key: i for i, key in enumerate(streams)}
    names = [k["name"] for k in top_kernels([o for o in tl.ops if o.kind == "kernel"], top)]
    cmap = plt.get_cmap("tab10")
    colour = {n: cmap(i % 10) for i, n in enumerate(names)}

    fig, ax = plt.subplots(figsize=(14, max(3.0, 0.5 * len(rows) + 1.5)))
    for op in tl.ops:
        row = row_of[(str(op.device), str(op.stream))]
        c = colour.get(op.name, "0.6") if op.kind == "kernel" else OTHER[op.kind]
        ax.broken_barh([((op.start - t0) / 1e3, max(op.dur, 0.5) / 1e3)], (row - 0.35, 0.7), color=c)
    for c in syncs:
        row = len(streams) + threads.index(str(c.tid))
        ax.broken_barh([((c.start - t0) / 1e3, max(c.dur, 0.5) / 1e3)], (row - 0.2, 0.4), color="black")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(rows, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("time since the first GPU activity (ms)")
    ax.set_title(f"{len(tl.ops)} GPU operations on {len(streams)} streams", fontsize=9)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colour[n]) for n in names]
    labels = [kernel_label(n, 60) for n in names]
    for kind, c in OTHER.items():
        if any(o.kind == kind for o in tl.ops):
            handles.append(plt.Rectangle((0, 0), 1, 1, color=c))
            labels.append(kind)
    ax.legend(handles, labels, fontsize=6, loc="upper right", framealpha=0.8)
    return save(plt, fig, out_png)
