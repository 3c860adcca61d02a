"""Proton's intra-kernel trace (``proton.chrome_trace``: ``proton.start(..., data="trace",
backend="instrumentation")``) read into IKET's records (iket_trace.Trace), so that one summariser
(iket_summary) and one plotter (timeline) serve both; iket_load tells the formats apart by content.

The trace is Chrome's trace-event JSON, one complete event (``"ph": "X"``) per scope and warp, e.g.
(triton 3.6.0, on the H200)::

    {"name": "first", "cat": "spin_kernel", "ph": "X", "ts": 0.045, "dur": 20.11,
     "pid": "spin_kernel Core124 CTA0", "tid": "warp 0 (line 0)",
     "args": {"Frequency (MHz)": 1000.0, "call_stack": ["ROOT", "spin_kernel"]}}

``ts``/``dur`` are microseconds at an assumed clock (``Frequency (MHz)``, 1000: cycles / 1000), so the
records hold SM clock cycles again (``Trace.unit == "cycles"``): ``dur`` 20.11 is 20,110 cycles. The
kernel is ``cat`` (else the pid's first word), the CTA and SM come from the pid, the warp from the tid.
Every event of one kernel makes one Launch: the trace does not tell launches of a kernel apart.
Events that are not complete events, or whose numbers are missing or not finite, are skipped and counted.
"""

from __future__ import annotations

import math
import re
from typing import Any

from kcoral.profiling.iket_trace import Launch, Loc, Range, Trace, TraceError

TOP_EVENTS = "traceEvents"
FREQUENCY_ARG = "Frequency (MHz)"
#: what a trace says when it does not say its clock (Proton's assumption)
DEFAULT_MHZ = 1000.0
#: the most events read (a trace of this many is ~300 MB of JSON)
MAX_EVENTS = 2_000_000
#: names longer than this are cut (they are the job's, and printed)
MAX_NAME = 200
_PID = re.compile(r"^(?P<kernel>.*?)\s+Core(?P<sm>\d+)\s+CTA(?P<cta>\d+)$")
_TID = re.compile(r"^warp\s+(?P<warp>\d+)")


def is_proton(doc: Any) -> bool:
    """A Chrome trace-event document (Proton's trace)."""
    return isinstance(doc, dict) and TOP_EVENTS in doc


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _name(value: Any) -> str:
    return (value if isinstance(value, str) else str(value))[:MAX_NAME]


def _where(event: dict[str, Any]) -> tuple[str, Loc | None]:
    """The event's kernel and location (None when its pid/tid do not say)."""
    pid, tid = _name(event.get("pid", "")), _name(event.get("tid", ""))
    m, w = _PID.match(pid), _TID.match(tid)
    kernel = event.get("cat") if isinstance(event.get("cat"), str) and event.get("cat") else None
    if m is None:
        return _name(kernel or pid or "?"), None
    loc = Loc((int(m["cta"]), 0, 0), int(w["warp"]) if w else -1, int(m["sm"]))
    return _name(kernel or m["kernel"]), loc


def from_document(doc: Any, source: str = "") -> Trace:
    """The records of a loaded Proton trace document (times in cycles)."""
    events = doc.get(TOP_EVENTS) if isinstance(doc, dict) else None
    if not isinstance(events, list):
        raise TraceError(f"{source or 'document'}: not a Proton trace (no traceEvents list)")
    if len(events) > MAX_EVENTS:
        raise TraceError(f"{source or 'document'}: {len(events)} events, more than the {MAX_EVENTS} read")
    launches: dict[str, Launch] = {}
    skipped = 0
    for event in events:
        if not isinstance(event, dict) or event.get("ph") != "X":
            skipped += 1
            continue
        args = event.get("args")
        if not isinstance(args, dict):
            args = {}
        mhz = _number(args.get(FREQUENCY_ARG)) or DEFAULT_MHZ
        ts, dur = _number(event.get("ts")), _number(event.get("dur"))
        kernel, loc = _where(event)
        launch = launches.get(kernel)
        if launch is None:
            launch = launches[kernel] = Launch(index=len(launches), grid_id=None, kernel=kernel, grid=None, block=None)
        if ts is None or dur is None or dur < 0 or mhz <= 0:
            launch.skipped += 1
            continue
        start = round(ts * mhz)
        launch.ranges.append(Range(_name(event.get("name", "?")), start, start + round(dur * mhz), loc))
    if not launches and skipped:
        raise TraceError(f"{source or 'document'}: a trace with no scope events (ph X) among its {skipped} events")
    return Trace(shape="proton", launches=list(launches.values()), source=source, unit="cycles")
