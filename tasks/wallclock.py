"""The server's own clock on a timed case: marker lines the harness prints around a batch of
back-to-back baseline calls and candidate calls, stamped when each log chunk reached the server.

Nothing the candidate's process reports is used here except the marker text itself; a forged,
missing, repeated or late marker is a problem, never a better figure.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from typing import Any

_MARK = re.compile(rb"##kcoral-wall (\S+) ([BME])\n")


def wall_marks(log: bytes, arrivals: list[tuple[int, float]]) -> dict[str, dict[str, Any]]:
    """{case id: {"B": t, "M": t, "E": t}} in server seconds, or {"problem": why} for that case."""
    ends = [a[0] for a in arrivals]
    marks: dict[str, dict[str, Any]] = {}
    for m in _MARK.finditer(log):
        case, tag = m.group(1).decode(errors="replace"), m.group(2).decode()
        entry = marks.setdefault(case, {})
        if "problem" in entry:
            continue
        if tag in entry:
            entry.clear()
            entry["problem"] = f"wall-clock marker {tag} printed twice"
            continue
        i = bisect_left(ends, m.end())
        t = arrivals[i][1] if i < len(arrivals) else math.inf
        if math.isinf(t):
            entry.clear()
            entry["problem"] = "wall-clock markers reached the server only after the process exited"
            continue
        entry[tag] = t
    for entry in marks.values():
        if "problem" not in entry and not ({"B", "M", "E"} <= entry.keys() and entry["B"] <= entry["M"] <= entry["E"]):
            entry.clear()
            entry["problem"] = "wall-clock markers incomplete or out of order"
    return marks


def per_call_ms(entry: dict[str, Any], calls: int) -> tuple[float, float]:
    """(baseline ms per call, kernel ms per call) from one case's markers."""
    return (entry["M"] - entry["B"]) * 1e3 / calls, (entry["E"] - entry["M"]) * 1e3 / calls
