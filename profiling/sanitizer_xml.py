"""compute-sanitizer's XML report (``--save FILE --xml``) as findings, read safely.

The layout read (NVIDIA publishes no schema; unknown elements are ignored)::

    <ComputeSanitizerOutput>
      <record>
        <kind>Precise</kind> <level>Error</level>
        <what><text>Invalid __global__ read of size 4 bytes</text> <size>4</size> ...</what>
        <where><func>add_kernel</func> <path>/job/input/oob.py</path> <line>12</line> <pc>0x70</pc></where>
        <who><threadIdx><x>127</x><y>0</y><z>0</z></threadIdx> <blockIdx>...</blockIdx></who>
        <hostStack>...</hostStack>
      </record>
      <record>  (racecheck's analysis: the two accesses)
        <kind>Analysis</kind> <level>Error</level>
        <what><text>Race condition</text> <source><direction>Write</direction> <where>...</where></source>
          <destination><direction>Read</direction> <where>...</where> <count>1024</count></destination></what>
      </record>
    </ComputeSanitizerOutput>

The file is the job's: it is read only when it is UTF-8 and declares no DOCTYPE or ENTITY (so no entity
can expand, be it a billion laughs or an external file), after the size cap of the caller, incrementally
with its depth and element count capped; anything refused is a :class:`ReportError`, never a traceback.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator

from kcoral.profiling.sanitizer_findings import Finding, Report, ReportError, clip
from kcoral.profiling.sanitizer_text import header_finding

ROOT = "ComputeSanitizerOutput"
#: the deepest element read (a record's frames are 4 deep) and the most elements in one document
MAX_DEPTH = 16
MAX_ELEMENTS = 5_000_000
CHUNK = 1 << 16
_DECLARATION = re.compile(rb"^\s*<\?xml[^>]*?encoding\s*=\s*[\"']([^\"']*)[\"']", re.I)
_FORBIDDEN = re.compile(rb"<!\s*(DOCTYPE|ENTITY)", re.I)


def looks_like_xml(data: bytes) -> bool:
    """Whether ``data`` starts like an XML document (after a byte-order mark and blanks)."""
    return data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"<")


def _check(data: bytes) -> None:
    """Refuse what this reader never parses: another encoding than UTF-8, a DOCTYPE or an ENTITY."""
    m = _DECLARATION.match(data)
    if m and m.group(1).lower() not in (b"utf-8", b"utf8", b"us-ascii", b"ascii"):
        raise ReportError("the XML report declares an encoding other than UTF-8: not a compute-sanitizer report")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        raise ReportError("the XML report is not UTF-8 text: not a compute-sanitizer report") from None
    if _FORBIDDEN.search(data):
        raise ReportError("the XML report declares a DOCTYPE or an ENTITY: refused (compute-sanitizer writes neither)")


def _records(data: bytes) -> Iterator[ET.Element]:
    """Each ``<record>`` below the root, parsed incrementally (each dropped once read), with the document's
    depth and element count capped: a deep or wide document costs no more memory than its records."""
    parser: ET.XMLPullParser[ET.Element] = ET.XMLPullParser(events=("start", "end"))
    root: ET.Element | None = None
    depth = count = 0
    try:
        for at in range(0, len(data) or 1, CHUNK):
            parser.feed(data[at : at + CHUNK])
            for pair in parser.read_events():
                event, element = pair[0], pair[-1]
                if not isinstance(element, ET.Element):
                    continue  # start-ns/end-ns events carry tuples: not asked for, never here
                if event == "start":
                    depth, count = depth + 1, count + 1
                    if depth == 1:
                        root = element
                    if depth == 1 and element.tag != ROOT:
                        raise ReportError(
                            f"the XML document is not a compute-sanitizer report (its root is not <{ROOT}>)"
                        )
                    if depth > MAX_DEPTH or count > MAX_ELEMENTS:
                        raise ReportError(
                            f"the XML report is deeper than {MAX_DEPTH} or has more than {MAX_ELEMENTS} elements"
                        )
                    continue
                depth -= 1
                if depth == 1 and root is not None:
                    if element.tag == "record":
                        yield element
                    root.remove(element)  # the root keeps no child: memory stays that of one record
        parser.close()
    except ET.ParseError as exc:
        raise ReportError(f"the XML report is not well-formed (truncated?): {exc}") from None


def _text(element: ET.Element | None, path: str) -> str | None:
    if element is None:
        return None
    found = element.find(path)
    return clip(found.text) if found is not None else None


def _triple(element: ET.Element | None) -> tuple[int, int, int] | None:
    if element is None:
        return None
    values = [_text(element, axis) for axis in ("x", "y", "z")]
    if not all(v is not None and v.isascii() and v.isdigit() and len(v) <= 10 for v in values):
        return None
    return int(values[0] or 0), int(values[1] or 0), int(values[2] or 0)


def _kind(what: str | None, kind: str | None) -> str:
    """The error's kind: the text module's name for its message when it knows it, else the message up
    to its first colon with addresses blanked (so that one kind of error groups as one)."""
    if what:
        known = header_finding(what)
        if known is not None:
            return known.kind
        head = what.split(": ", 1)[0]
        return re.sub(r"0x[0-9a-fA-F]+", "0x...", head)
    return kind or "error"


def _finding(record: ET.Element) -> Finding:
    what = _text(record, "what/text")
    # racecheck's analysis records name no <where> of their own: the kernel is their accesses' (the write's
    # side, what/source/where; compute-sanitizer 2025.3 on the H200), and the directions say which race
    where = record.find("where")
    if where is None:
        where = record.find("what/source/where")
        sides = _text(record, "what/source/direction"), _text(record, "what/destination/direction")
        if what and all(sides):
            what = f"{what} ({sides[0]} / {sides[1]})"
    path, line = _text(where, "path"), _text(where, "line")
    location = f"{path}:{line}" if path and line else path
    who = record.find("who")
    level = (_text(record, "level") or "error").lower()
    return Finding(
        kind=_kind(what, _text(record, "kind")),
        kernel=_text(where, "func"),
        location=clip(location),
        thread=_triple(who.find("threadIdx") if who is not None else None),
        block=_triple(who.find("blockIdx") if who is not None else None),
        level=level if level in ("error", "warning") else "error",
        message=what or "",
    )


def parse_xml(data: bytes) -> Report:
    """The findings of an XML report; ReportError when it is not one (or not one read safely)."""
    _check(data)
    report = Report("xml")
    for record in _records(data):
        report.add(_finding(record))
    return report
