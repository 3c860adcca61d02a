"""Reading a timeline's Chrome trace (torch.profiler's ``export_chrome_trace``: Kineto's JSON, which Perfetto
opens) into the records the summary needs: the GPU's kernels, copies, memsets and synchronisations with
their stream, and the CUDA runtime and driver calls with their thread (joined by their correlation id).

A trace is a job's file, so it is read as hostile: a regular file only, at most :data:`MAX_TRACE_BYTES`
(gzipped: unzipped to at most that), at most :data:`MAX_JSON_CONTAINERS` JSON objects and arrays (a file
of ``[{}, {}, ...]`` would otherwise take gigabytes once parsed), nesting as deep as the JSON parser takes;
every field is checked before use (a record without a finite time is skipped and counted). Names are
kept as they are: whoever prints them escapes them (protocol.printable). Any other file raises
:class:`TimelineError` with one line.

Every field and category this module reads is in the FIELD MAP below (Kineto's names, and the older ones).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any

from kcoral.profiling.capped import GZIP_MAGIC, gunzip, open_regular, parse_json, read_at_most

MAX_TRACE_BYTES = 256 << 20
MAX_JSON_CONTAINERS = 4_000_000
#: the most characters of a name kept (a C++ template kernel's name runs to a few thousand)
MAX_NAME = 4096

# --- FIELD MAP ---------------------------------------------------------------------------------------------
CAT_KERNEL = {"kernel"}
CAT_MEMCPY = {"gpu_memcpy", "memcpy"}
CAT_MEMSET = {"gpu_memset", "memset"}
CAT_SYNC = {"cuda_sync"}  # CUPTI's synchronisation records (torch's enable_cuda_sync_events)
CAT_CALL = {"cuda_runtime", "cuda_driver", "runtime", "driver"}
ARG_STREAM, ARG_DEVICE, ARG_CORRELATION, ARG_BYTES = "stream", "device", "correlation", "bytes"
TOP_EVENTS = "traceEvents"
TOP_VERSIONS = ("cupti_version", "cuda_runtime_version", "cuda_driver_version")
#: host calls that wait for the GPU (a name containing one of these)
HOST_SYNC_NAMES = ("Synchronize", "StreamWaitEvent", "StreamQuery", "EventQuery")
# ----------------------------------------------------------------------------------------------------------


class TimelineError(ValueError):
    """A file that is not a readable timeline trace; the message says why, in one line."""


@dataclass(frozen=True)
class GpuOp:
    """A kernel, copy, memset or synchronisation on a stream; times in microseconds."""

    kind: str  # "kernel", "memcpy", "memset", "sync"
    name: str
    start: float
    dur: float
    device: int | str | None
    stream: int | str | None
    correlation: int | None
    bytes: int | None = None

    @property
    def end(self) -> float:
        return self.start + self.dur


@dataclass(frozen=True)
class Call:
    """A CUDA runtime or driver call on a host thread."""

    name: str
    start: float
    dur: float
    pid: int | str | None
    tid: int | str | None
    correlation: int | None


@dataclass
class Timeline:
    ops: list[GpuOp] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    #: (pid, tid) -> the thread's name (Chrome trace metadata)
    threads: dict[tuple[Any, Any], str] = field(default_factory=dict)
    #: what recorded it: CUPTI and CUDA versions, the devices' names
    recorder: dict[str, Any] = field(default_factory=dict)
    events: int = 0
    skipped: int = 0
    source: str = ""


#: the longest activity a record may claim (us, about 28 hours: no job runs longer) and the farthest time from
#: zero (us: Kineto's clock is within 1e16): a record past either is skipped as unreadable, so a forged
#: 1e308 us kernel cannot fill a summary with a 300-digit total
MAX_DUR_US = 1e11
MAX_TS_US = 1e18


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _ident(value: Any) -> int | str | None:
    """A stream, device, pid or tid: an integer or a short string."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        return value[:64]
    return None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _name(value: Any) -> str:
    return value[:MAX_NAME] if isinstance(value, str) else "?"


def _args(ev: dict[str, Any]) -> dict[str, Any]:
    args = ev.get("args")
    return args if isinstance(args, dict) else {}


def _op(kind: str, ev: dict[str, Any], start: float, dur: float) -> GpuOp:
    args = _args(ev)
    stream = _ident(args.get(ARG_STREAM))
    return GpuOp(
        kind=kind,
        name=_name(ev.get("name")),
        start=start,
        dur=dur,
        device=_ident(args.get(ARG_DEVICE)),
        stream=stream if stream is not None else _ident(ev.get("tid")),
        correlation=_int(args.get(ARG_CORRELATION)),
        bytes=_int(args.get(ARG_BYTES)),
    )


def _kind_of(cat: str) -> str | None:
    cat = cat.lower()
    for kind, cats in (("kernel", CAT_KERNEL), ("memcpy", CAT_MEMCPY), ("memset", CAT_MEMSET), ("sync", CAT_SYNC)):
        if cat in cats:
            return kind
    return "call" if cat in CAT_CALL else None


def _add(tl: Timeline, ev: Any) -> None:
    if not isinstance(ev, dict):
        tl.skipped += 1
        return
    ph = ev.get("ph")
    if ph == "M":
        if ev.get("name") == "thread_name":
            key = (_ident(ev.get("pid")), _ident(ev.get("tid")))
            tl.threads[key] = _name(_args(ev).get("name"))[:200]
        return
    cat = ev.get("cat")
    kind = _kind_of(cat) if isinstance(cat, str) else None
    if ph != "X" or kind is None:
        return
    start, dur = _number(ev.get("ts")), _number(ev.get("dur"))
    if start is None or dur is None or not 0 <= dur <= MAX_DUR_US or abs(start) > MAX_TS_US:
        tl.skipped += 1
        return
    if kind == "call":
        args = _args(ev)
        tl.calls.append(
            Call(
                _name(ev.get("name")),
                start,
                dur,
                _ident(ev.get("pid")),
                _ident(ev.get("tid")),
                _int(args.get(ARG_CORRELATION)),
            )
        )
    else:
        tl.ops.append(_op(kind, ev, start, dur))


def _recorder(doc: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {k: doc[k] for k in TOP_VERSIONS if _int(doc.get(k)) is not None}
    devices = doc.get("deviceProperties")
    if isinstance(devices, list):
        out["devices"] = sorted({_name(d.get("name"))[:80] for d in devices[:64] if isinstance(d, dict)})
    return out


def from_document(doc: Any, source: str = "") -> Timeline:
    """A Chrome trace's records: ``{"traceEvents": [...], ...}`` or the bare list of events."""
    events = doc.get(TOP_EVENTS) if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise TimelineError(f"{source or 'input'}: not a Chrome trace (no traceEvents list)")
    tl = Timeline(source=source, events=len(events), recorder=_recorder(doc) if isinstance(doc, dict) else {})
    for ev in events:
        _add(tl, ev)
    tl.ops.sort(key=lambda op: op.start)
    return tl


def from_bytes(data: bytes, source: str = "") -> Timeline:
    if data[:2] == GZIP_MAGIC:
        data = gunzip(data, MAX_TRACE_BYTES, source, TimelineError)
    if not data.strip():
        raise TimelineError(f"{source or 'input'}: empty file")
    containers = data.count(b"{") + data.count(b"[")  # an upper bound, counted before anything is parsed
    if containers > MAX_JSON_CONTAINERS:
        raise TimelineError(
            f"{source or 'input'}: more than {MAX_JSON_CONTAINERS:,} JSON objects and arrays, the most a trace "
            "is read with"
        )
    return from_document(parse_json(data, source, TimelineError), source)


def load(path: str | os.PathLike[str]) -> Timeline:
    """Read a timeline trace (Chrome JSON, gzipped or not) from a file."""
    name = os.fspath(path)
    with open_regular(name, TimelineError) as f:
        data = read_at_most(f, MAX_TRACE_BYTES, name, TimelineError)
    return from_bytes(data, name)
