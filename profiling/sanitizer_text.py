"""compute-sanitizer's text report (its --log-file, or what it printed) as findings.

Every line of the tool's own starts with its prefix ``=========``; other lines (the application's) are
skipped. An error starts at a line with one space after the prefix and goes on with indented lines::

    ========= COMPUTE-SANITIZER
    ========= Invalid __global__ read of size 4 bytes
    =========     at add_kernel+0x70 in /job/input/oob.py:12
    =========     by thread (127,0,0) in block (3,0,0)
    =========     Address 0x7f1c00000200 is out of bounds
    ...
    ========= ERROR SUMMARY: 1 error

Racecheck's lines name both accesses (``Error: Race reported between Write access at K+0x1f0 in F:20``
then ``and Read access at ...``, or in hazard mode ``Error: Potential WAW hazard detected at __shared__
0x0 in block (0,0,0) :`` then ``Write Thread (0,0,0) at ... in F:18``); synccheck's start ``Barrier
error detected.``. A header line this reader does not name (a hardware exception such as ``Warp Illegal
Address``) is an error when an ``at ...`` line follows it, its kind the line itself; otherwise it is kept
as a note (``Target application returned an error``). The tool's ERROR SUMMARY gives the total.
"""

from __future__ import annotations

import re

from kcoral.profiling.sanitizer_findings import Finding, Report, ReportError, clip

PREFIX = "========="
#: the most notes kept (lines of the tool's own that are no error)
MAX_NOTES = 50
_NUM = r"([0-9]{1,10})"
_TRIPLE = rf"\({_NUM},\s*{_NUM},\s*{_NUM}\)"

#: header lines that start an error: (pattern, how its kind is named)
_MEMORY = re.compile(r"(?P<kind>(?:Invalid|Misaligned|Uninitialized) .*? of size [0-9]+(?: bytes?)?)", re.I)
_RACE = re.compile(r"(?P<level>Error|Warning): Race reported between (?P<a>\w+) access at (?P<at>.*)", re.I)
_HAZARD = re.compile(
    rf"(?P<level>Error|Warning): Potential (?P<hz>\w+) hazard detected at .*? in block {_TRIPLE}", re.I
)
_BARRIER = re.compile(r"(?P<kind>Barrier error detected\.?.*)", re.I)
_API = re.compile(r"Program hit (?P<err>\w+) \(error \d+\).*? on CUDA API call to (?P<call>\w+)", re.I)
_LEAK = re.compile(r"Leaked \d+ bytes? at", re.I)
_UNUSED = re.compile(r"(?P<kind>Unused memory in allocation)", re.I)
_HOST_INIT = re.compile(r"(?P<kind>Host API uninitialized memory access)", re.I)
_SUMMARY = re.compile(r"ERROR SUMMARY:\s*([0-9]{1,12}) errors?", re.I)
_SANITIZER = re.compile(r"COMPUTE-SANITIZER\b", re.I)

#: detail lines
_AT = re.compile(r"at (?P<where>.+?)(?: in (?P<file>.+?))?(?:\s+\[\d+ hazards?\])?$")
_THREAD = re.compile(rf"by thread {_TRIPLE} in block {_TRIPLE}")
_HAZARD_THREAD = re.compile(rf"\w+ Thread {_TRIPLE} at (?P<at>.*)")


def looks_like_text(text: str) -> bool:
    """Whether ``text`` has compute-sanitizer's banner or its error summary on a prefixed line."""
    return any(
        line.startswith(PREFIX) and (_SANITIZER.search(line) or _SUMMARY.search(line)) for line in text.split("\n")
    )


def _triple(m: re.Match[str], first: int) -> tuple[int, int, int]:
    return int(m.group(first)), int(m.group(first + 1)), int(m.group(first + 2))


def split_where(where: str, file: str | None) -> tuple[str | None, str | None]:
    """``(kernel, FILE:LINE)`` of an ``at ...`` detail, in the layouts compute-sanitizer has printed:
    ``add_kernel+0x70 in /f.py:12``, ``k(float*)+0x160 in f.cu:6``, ``0x100 in /f.cu:30:k(const int *)``."""
    kernel = re.sub(r"\+0x[0-9a-fA-F]+$", "", where.strip())
    if re.fullmatch(r"0x[0-9a-fA-F]+", kernel):
        kernel = ""
    location = None
    if file:
        m = re.fullmatch(r"(?P<path>.+?:\d+)(?::(?P<func>.+))?", file.strip())
        if m:
            location = m.group("path")
            kernel = kernel or (m.group("func") or "")
        elif not kernel:
            kernel = file.strip()
    return clip(kernel), clip(location)


def header_finding(body: str) -> Finding | None:
    """The finding a header line starts, or None when it starts none."""
    if m := _RACE.match(body):
        kernel, location = _at(m.group("at"))
        level = m.group("level").lower()
        return Finding("Race hazard", kernel, location, level=level, message=clip(body) or "")
    if m := _HAZARD.match(body):
        kind = f"Potential {m.group('hz').upper()} hazard"
        return Finding(kind, block=_triple(m, 3), level=m.group("level").lower(), message=clip(body) or "")
    if m := _API.match(body):
        return Finding(f"CUDA API error {m.group('err')} on {m.group('call')}", message=clip(body) or "")
    if _LEAK.match(body):
        return Finding("Memory leak", message=clip(body) or "")
    for pattern in (_MEMORY, _BARRIER, _UNUSED, _HOST_INIT):
        if m := pattern.match(body):
            return Finding(clip(m.group("kind").rstrip(" .:")) or "error", message=clip(body) or "")
    return None


def _at(text: str) -> tuple[str | None, str | None]:
    m = _AT.match("at " + text.strip())
    return split_where(m.group("where"), m.group("file")) if m else (None, None)


def _detail(finding: Finding, body: str) -> None:
    """Fill what an indented line of ``finding`` says that it does not know yet."""
    if m := _THREAD.match(body):
        finding.thread = finding.thread or _triple(m, 1)
        finding.block = finding.block or _triple(m, 4)
    elif m := _HAZARD_THREAD.match(body):
        finding.thread = finding.thread or _triple(m, 1)
        kernel, location = _at(m.group("at"))
        finding.kernel, finding.location = finding.kernel or kernel, finding.location or location
    elif body.startswith("at ") and (m := _AT.match(body)):
        kernel, location = split_where(m.group("where"), m.group("file"))
        finding.kernel, finding.location = finding.kernel or kernel, finding.location or location


def parse_text(text: str) -> Report:
    """The findings of a text report; ReportError when it is not one."""
    if not looks_like_text(text):
        raise ReportError("not a compute-sanitizer report (no ========= COMPUTE-SANITIZER or ERROR SUMMARY line)")
    report = Report("text")
    current: Finding | None = None
    unknown: Finding | None = None  # a header this reader does not name: an error once a detail follows it
    for raw in text.split("\n"):  # not splitlines(): a CR or a form feed in a name stays in its line
        raw = raw.removesuffix("\r")
        if not raw.startswith(PREFIX):
            continue
        line = raw[len(PREFIX) :]
        body = line.strip()
        if line.startswith("  ") and body:
            if unknown is not None and _AT.match(body) and body.startswith("at "):
                report.add(unknown)
                current, unknown = unknown, None
            if current is not None:
                _detail(current, body)
            continue
        if unknown is not None and len(report.notes) < MAX_NOTES:
            report.notes.append(unknown.message)
        current = unknown = None
        if not body or _SANITIZER.match(body):
            continue
        if m := _SUMMARY.match(body):
            report.total = int(m.group(1))
            continue
        current = header_finding(body)
        if current is not None:
            report.add(current)
        else:
            kind = re.sub(r"0x[0-9a-fA-F]+", "0x...", body).rstrip(" .:")
            unknown = Finding(clip(kind) or "error", message=clip(body) or "")
    if unknown is not None and len(report.notes) < MAX_NOTES:
        report.notes.append(unknown.message)
    return report
