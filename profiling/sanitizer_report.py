"""A compute-sanitizer report, text or XML (told apart by its first bytes), summarised: its errors grouped
by kernel and kind, each group's count with its first source location and first thread and block.

    load(path) -> Report          # ReportError (one line) for a file that is none, too big, or broken
    summarize(report) -> dict     # the JSON document (kcoral sanitizer summarize --json, the MCP tool)
    format_lines(doc) -> [str]    # for a person, every job-chosen string escaped

Stdlib only, and nothing else of kcoral imported at load: profiling.run_tool counts a job's errors with it
inside the container, where only kcoral.profiling is.
"""

from __future__ import annotations

import os
from typing import Any

from kcoral.profiling.sanitizer_findings import Finding, Report, ReportError
from kcoral.profiling.sanitizer_text import parse_text
from kcoral.profiling.sanitizer_xml import looks_like_xml, parse_xml

#: the largest report read (a --print-limit of 100 errors with their backtraces is well under 1 MiB)
MAX_REPORT_BYTES = 32 << 20


def read_capped(path: str | os.PathLike[str], limit: int = MAX_REPORT_BYTES) -> bytes:
    """The file's bytes; ReportError when it cannot be read or is larger than ``limit``."""
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as exc:
        raise ReportError(str(exc.strerror or exc)) from None
    if len(data) > limit:
        size = f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit} bytes"
        raise ReportError(f"larger than the {size} a report may be: not read")
    return data


def parse(data: bytes) -> Report:
    """A report from its bytes, XML or text; ReportError when it is neither."""
    if looks_like_xml(data):
        return parse_xml(data)
    if b"\x00" in data:
        raise ReportError("not a compute-sanitizer report (binary data)")
    return parse_text(data.decode("utf-8", errors="replace"))


def load(path: str | os.PathLike[str], limit: int = MAX_REPORT_BYTES) -> Report:
    return parse(read_capped(path, limit))


def load_pair(xml: str | os.PathLike[str] | None, text: str | os.PathLike[str] | None) -> Report:
    """A job's two reports as one: the XML's findings (its fields are the tool's own) with the text's
    total (only the text has the ERROR SUMMARY), either alone when the other is missing. ReportError when
    neither is there or one is broken."""
    got_xml = load(xml) if xml is not None and os.path.exists(xml) else None
    got_text = load(text) if text is not None and os.path.exists(text) else None
    if got_xml is None and got_text is None:
        raise ReportError("no compute-sanitizer report came back (see the job's log)")
    if got_xml is None:
        assert got_text is not None
        return got_text
    if got_text is not None:
        got_xml.total, got_xml.notes = got_text.total, got_text.notes
    return got_xml


def _group_key(f: Finding) -> tuple[str, str, str]:
    return (f.kernel or "", f.kind, f.level)


def summarize(report: Report) -> dict[str, Any]:
    """``{"format", "tool", "errors", "printed", "groups": [{kernel, kind, level, count, location,
    thread, block, message}], "notes"}``, the groups by count, largest first."""
    groups: dict[tuple[str, str, str], dict[str, Any]] = {}
    for f in report.findings:
        key = _group_key(f)
        group = groups.get(key)
        if group is None:
            group = groups[key] = {
                "kernel": f.kernel,
                "kind": f.kind,
                "level": f.level,
                "count": 0,
                "location": f.location,
                "thread": list(f.thread) if f.thread else None,
                "block": list(f.block) if f.block else None,
                "message": f.message,
            }
        group["count"] += 1
        group["location"] = group["location"] or f.location
        if group["thread"] is None and f.thread:
            group["thread"], group["block"] = list(f.thread), list(f.block) if f.block else None
    ordered = sorted(groups.values(), key=lambda g: (-g["count"], g["kernel"] or "", g["kind"]))
    return {
        "format": report.format,
        "tool": report.tool,
        "errors": report.errors,
        "printed": len(report.findings),
        "groups": ordered,
        "notes": list(report.notes),
    }


def _triple(values: object) -> str:
    if isinstance(values, list) and values and all(isinstance(v, int) for v in values):
        return "(" + ",".join(str(v) for v in values) + ")"
    return "?"


def format_lines(doc: dict[str, Any]) -> list[str]:
    """The summary for a person, one group a line; the job's strings escaped (kcoral.protocol.printable)."""
    from kcoral.protocol.printable import printable

    errors, printed = int(doc.get("errors") or 0), int(doc.get("printed") or 0)
    lines = [
        f"compute-sanitizer: {errors} error{'s' if errors != 1 else ''}"
        + (f" ({printed} printed in the report)" if printed != errors else "")
    ]
    for g in doc.get("groups", []):
        where = printable(str(g.get("location") or "no source line"))
        kernel = printable(str(g.get("kernel") or "(no kernel)"))
        level = "" if g.get("level") == "error" else f" [{printable(str(g.get('level')))}]"
        first = f"; first thread {_triple(g.get('thread'))} block {_triple(g.get('block'))}" if g.get("thread") else ""
        lines.append(f"  {g.get('count'):>6}x  {kernel}: {printable(str(g.get('kind')))}{level} at {where}{first}")
    for note in doc.get("notes", []):
        lines.append(f"  note: {printable(str(note))}")
    return lines
