"""What an agent wants from a timeline (times in microseconds, from the first GPU activity):

* the top kernels by total time: count, total, mean, max, share of all kernel time;
* per stream (device, stream): its kernels and busy time; the gaps between consecutive kernels (the
  stream idle from one kernel's end to the next one's start: median, p90, max, and where the largest
  is); the launch latency (the launching call's start to the kernel's start); its copies by kind
  (count, bytes, time), memsets, CUPTI's synchronisation records; the host threads that launched onto it;
* the host's synchronising calls (cudaDeviceSynchronize, cudaStreamSynchronize, ...) per thread.

A trace with no GPU activity (a CPU-only run) gives a summary that says so.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from kcoral.profiling.gputrace_load import HOST_SYNC_NAMES, Call, GpuOp, Timeline
from kcoral.protocol.printable import printable

TOP = 10


def percentile(sorted_values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) by linear interpolation between the closest ranks."""
    if len(sorted_values) == 1:
        return sorted_values[0]
    pos = q * (len(sorted_values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def spread(values: Iterable[float]) -> dict[str, Any]:
    vals = sorted(values)
    if not vals:
        return {"count": 0, "median": None, "p90": None, "max": None}
    return {"count": len(vals), "median": statistics.median(vals), "p90": percentile(vals, 0.9), "max": vals[-1]}


def _stream_key(op: GpuOp) -> tuple[str, str]:
    return (str(op.device), str(op.stream))


def top_kernels(kernels: list[GpuOp], top: int) -> list[dict[str, Any]]:
    by_name: dict[str, list[GpuOp]] = defaultdict(list)
    for k in kernels:
        by_name[k.name].append(k)
    all_time = sum(k.dur for k in kernels) or 1.0
    rows: list[dict[str, Any]] = []
    for name, ks in by_name.items():
        total = sum(k.dur for k in ks)
        streams = sorted({str(k.stream) for k in ks})
        rows.append({"name": name, "count": len(ks), "total": total, "mean": total / len(ks),
                     "max": max(k.dur for k in ks), "share": total / all_time, "streams": streams})  # fmt: skip
    rows.sort(key=lambda r: (-r["total"], r["name"]))
    return rows[:top]


def _gaps(kernels: list[GpuOp], t0: float) -> tuple[dict[str, Any], dict[str, Any] | None]:
    gaps = [(max(0.0, b.start - a.end), a, b) for a, b in zip(kernels, kernels[1:], strict=False)]
    stats = spread(g for g, _a, _b in gaps)
    if not gaps:
        return stats, None
    g, a, b = max(gaps, key=lambda x: x[0])
    return stats, {"gap": g, "at": a.end - t0, "after": a.name, "before": b.name}


def _copies(ops: list[GpuOp]) -> list[dict[str, Any]]:
    by_name: dict[str, list[GpuOp]] = defaultdict(list)
    for op in ops:
        by_name[op.name].append(op)
    return [
        {"name": name, "count": len(v), "bytes": sum(o.bytes or 0 for o in v), "total": sum(o.dur for o in v)}
        for name, v in sorted(by_name.items())
    ]


def _thread(call: Call, threads: dict[tuple[Any, Any], str]) -> str:
    """``thread TID (NAME)``; Kineto's names already read so."""
    name = threads.get((call.pid, call.tid))
    if name and str(call.tid) in name:
        return name.strip()
    return f"thread {call.tid}" + (f" ({name.strip()})" if name else "")


def stream_summary(
    key: tuple[str, str], ops: list[GpuOp], tl: Timeline, launches: dict[int, Call], t0: float
) -> dict[str, Any]:
    kernels = [o for o in ops if o.kind == "kernel"]
    gaps, largest = _gaps(kernels, t0)
    latency = [k.start - launches[k.correlation].start for k in kernels if k.correlation in launches]
    threads = sorted({_thread(launches[o.correlation], tl.threads) for o in ops if o.correlation in launches})
    return {
        "device": key[0],
        "stream": key[1],
        "kernels": len(kernels),
        "busy": sum(k.dur for k in kernels),
        "first": ops[0].start - t0,
        "last": max(o.end for o in ops) - t0,
        "gaps": gaps,
        "largest_gap": largest,
        "launch_latency": spread(v for v in latency if v >= 0),
        "copies": _copies([o for o in ops if o.kind == "memcpy"]),
        "memsets": _copies([o for o in ops if o.kind == "memset"]),
        "syncs": _copies([o for o in ops if o.kind == "sync"]),
        "threads": threads,
    }


def host_syncs(tl: Timeline) -> list[dict[str, Any]]:
    by_name: dict[str, list[Call]] = defaultdict(list)
    for c in tl.calls:
        if any(s in c.name for s in HOST_SYNC_NAMES):
            by_name[c.name].append(c)
    return [
        {
            "name": name,
            "count": len(cs),
            "total": sum(c.dur for c in cs),
            "max": max(c.dur for c in cs),
            "threads": sorted({_thread(c, tl.threads) for c in cs}),
        }  # fmt: skip
        for name, cs in sorted(by_name.items())
    ]


def summarize(tl: Timeline, top: int = TOP) -> dict[str, Any]:
    """The summary document of a timeline."""
    ops = tl.ops
    t0 = ops[0].start if ops else 0.0
    launches = {c.correlation: c for c in tl.calls if c.correlation is not None}
    by_stream: dict[tuple[str, str], list[GpuOp]] = defaultdict(list)
    for op in ops:
        by_stream[_stream_key(op)].append(op)
    kernels = [o for o in ops if o.kind == "kernel"]
    counts = {kind: sum(1 for o in ops if o.kind == kind) for kind in ("kernel", "memcpy", "memset", "sync")}
    return {
        "source": tl.source,
        "units": "us",
        "recorder": tl.recorder,
        "events": tl.events,
        "skipped_records": tl.skipped,
        "counts": {**counts, "calls": len(tl.calls), "streams": len(by_stream)},
        "span": (max(o.end for o in ops) - t0) if ops else None,
        "kernel_time": sum(k.dur for k in kernels),
        "top_kernels": top_kernels(kernels, top),
        "streams": [stream_summary(k, v, tl, launches, t0) for k, v in sorted(by_stream.items())],
        "host_syncs": host_syncs(tl),
    }


# --- text ------------------------------------------------------------------------------------------------------


def _us(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v / 1e3:.3f} ms" if abs(v) >= 1e4 else f"{v:.1f} us"


def short(name: str, width: int = 90) -> str:
    """A name a job chose, escaped, cut to ``width`` characters."""
    shown = printable(name)
    return shown if len(shown) <= width else shown[: width - 3] + "..."


_WORDS = {"memcpy": ("copy", "copies")}


def _plural(n: int, what: str) -> str:
    one, many = _WORDS.get(what, (what, what + "s"))
    return f"{n} {one if n == 1 else many}"


def _spread(d: dict[str, Any]) -> str:
    return f"median {_us(d['median'])}, p90 {_us(d['p90'])}, max {_us(d['max'])}"


_OPEN, _CLOSE = "<({[", ">)}]"


def kernel_label(name: str, width: int = 90) -> str:
    """A kernel's name as a person scans it: without ``void``, what is nested two deep in its template
    arguments and parameters as ``...``, its parameter list dropped; escaped, cut to ``width``."""
    out, depth = [], 0
    for ch in name.removeprefix("void ").replace("(anonymous namespace)::", ""):
        if ch in _CLOSE:
            depth = max(0, depth - 1)
        if depth < 2:
            out.append(ch)
        elif out[-1] != "...":
            out.append("...")
        if ch in _OPEN:
            depth += 1
    label = "".join(out)
    if label.endswith(")") and "(" in label:
        label = label[: label.rindex("(")] if label.count("(") == 1 or label.endswith("(...)") else label
    return short(label or name, width)


def _size(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else f"{n / 1024:.1f} KiB" if n >= 1024 else f"{n} B"


def _items(rows: list[dict[str, Any]], with_bytes: bool) -> str:
    def one(r: dict[str, Any]) -> str:
        size = f" {_size(r['bytes'])}" if with_bytes and r["bytes"] else ""
        return f"{r['count']}x {short(r['name'], 48)}{size} in {_us(r['total'])}"

    return "; ".join(one(r) for r in rows)


def format_lines(doc: dict[str, Any]) -> list[str]:
    """The summary as a person reads it (every name escaped, long names cut)."""
    c, rec = doc["counts"], doc["recorder"]
    made = ", ".join(
        [f"{k.replace('_version', '').replace('_', ' ')} {rec[k]}" for k in rec if k.endswith("_version")]
        + [short(d, 40) for d in rec.get("devices", [])]
    )
    made = f" ({made})" if made else ""
    if not c["kernel"] + c["memcpy"] + c["memset"] + c["sync"]:
        return [f"timeline: no GPU activity in {doc['events']} trace events{made}"]
    counted = ", ".join(_plural(c[k], k) for k in ("kernel", "memcpy", "memset", "sync"))
    lines = [f"timeline: {counted} on {_plural(c['streams'], 'stream')} over {_us(doc['span'])}{made}"]
    if doc["top_kernels"]:
        lines.append(f"top kernels by total time (all kernels: {_us(doc['kernel_time'])}):")
        lines.append(f"  {'total':>12} {'count':>6} {'mean':>12} {'max':>12} {'share':>6}  name")
        for k in doc["top_kernels"]:
            lines.append(
                f"  {_us(k['total']):>12} {k['count']:>6} {_us(k['mean']):>12} {_us(k['max']):>12} "
                f"{k['share']:>6.1%}  {kernel_label(k['name'])}"
            )
    for s in doc["streams"]:
        by = f", launched by {', '.join(short(t, 40) for t in s['threads'])}" if s["threads"] else ""
        lines.append(
            f"stream {short(s['stream'], 20)} (device {short(s['device'], 20)}{by}): {s['kernels']} kernels, "
            f"busy {_us(s['busy'])}, from {_us(s['first'])} to {_us(s['last'])}"
        )
        if s["gaps"]["count"]:
            lines.append(f"  gaps between kernels: {_spread(s['gaps'])} ({s['gaps']['count']} gaps)")
            big = s["largest_gap"]
            lines.append(
                f"  largest gap {_us(big['gap'])} at {_us(big['at'])}: after {kernel_label(big['after'], 60)}, "
                f"before {kernel_label(big['before'], 60)}"
            )
        if s["launch_latency"]["count"]:
            lines.append(f"  launch to start: {_spread(s['launch_latency'])}")
        for label, key, with_bytes in (
            ("copies", "copies", True),
            ("memsets", "memsets", True),
            ("syncs", "syncs", False),
        ):
            if s[key]:
                lines.append(f"  {label}: {_items(s[key], with_bytes)}")
    if doc["host_syncs"]:
        lines.append(
            "host syncs: "
            + "; ".join(
                f"{short(h['name'], 40)} {h['count']}x {_us(h['total'])} (max {_us(h['max'])})"
                for h in doc["host_syncs"]
            )
        )
    if doc["skipped_records"]:
        lines.append(f"({doc['skipped_records']} records without a readable time were skipped)")
    return lines
