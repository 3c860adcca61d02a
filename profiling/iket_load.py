"""Reading a trace file: IKET's JSON trace (iket_trace) or Perfetto trace (iket_perfetto), or Proton's
Chrome trace (proton_trace), told apart by their bytes (then by the file's extension), gzipped or not.
JSON documents are told apart by their top level: IKET's ``launches``, Proton's ``traceEvents``."""

from __future__ import annotations

import os
from typing import IO

from kcoral.profiling import iket_perfetto, iket_trace, proton_trace
from kcoral.profiling.capped import GZIP_MAGIC, gunzip, open_regular, parse_json, read_at_most
from kcoral.profiling.iket_trace import Trace, TraceError

#: how many bytes tell the formats apart
SNIFF_BYTES = 64
#: a Perfetto trace starts with its first TracePacket: field 1, length-delimited
PERFETTO_MAGIC = b"\x0a"
JSON_EXTENSIONS = (".json", ".chrome_trace")
PERFETTO_EXTENSIONS = (".pftrace", ".perfetto-trace", ".pb")
JSON_START = (b"{", b"[")
UTF8_BOM = b"\xef\xbb\xbf"


def _kind(head: bytes, name: str) -> str:
    """Which reader reads it, "json" or "perfetto": told by the first bytes, else by the name's extension."""
    stripped = head.removeprefix(UTF8_BOM).lstrip(b" \t\r\n")
    if stripped[:1] in JSON_START:
        return "json"
    if head[:1] == PERFETTO_MAGIC:
        return "perfetto"
    lower = name.lower().removesuffix(".gz")
    if lower.endswith(JSON_EXTENSIONS):
        return "json"
    if lower.endswith(PERFETTO_EXTENSIONS):
        return "perfetto"
    raise TraceError(
        f"{name or 'input'}: neither an IKET JSON trace (.trace.json) nor a Perfetto trace (.pftrace) "
        "nor a Proton trace (.chrome_trace): "
        f"it starts with {head[:8]!r}"
    )


def from_bytes(data: bytes, source: str = "") -> Trace:
    """A trace in either format (gzipped or not), told apart by its first bytes or ``source``'s extension."""
    if data[:2] == GZIP_MAGIC:
        data = gunzip(data, iket_perfetto.MAX_TRACE_BYTES, source, TraceError)
    if not data.strip():
        raise TraceError(f"{source or 'input'}: empty file")
    if _kind(data[:SNIFF_BYTES], source) == "json":
        return from_json(data, source)
    return iket_perfetto.from_bytes(data, source)


def from_json(data: bytes | str, source: str = "") -> Trace:
    """An IKET JSON trace or a Proton trace, told apart by the document's top level."""
    doc = parse_json(data, source, TraceError)
    if proton_trace.is_proton(doc):
        return proton_trace.from_document(doc, source)
    if isinstance(doc, list) and doc and isinstance(doc[0], dict) and "frame" in doc[0]:
        raise TraceError(
            f"{source or 'input'}: a Proton tree (.hatchet): sums per scope, no events to summarise here "
            "(kcoral proton summarize FILE.hatchet reads it; kcoral proton --data trace gives the trace)"
        )
    return iket_trace.from_document(doc, source)


def _read_file(path: str) -> bytes:
    """A regular file's bytes: a JSON trace whole (as json.load would), a Perfetto trace up to its bound."""
    with open_regular(path, TraceError) as f:
        head = f.read(SNIFF_BYTES)
        if head[:2] != GZIP_MAGIC and _kind(head, path) == "json":
            return head + f.read()
        return read_at_most(f, iket_perfetto.MAX_TRACE_BYTES, path, TraceError, "a Perfetto trace", head)


def load(path_or_file: str | os.PathLike[str] | IO[bytes] | IO[str]) -> Trace:
    """Read a trace (JSON or Perfetto, gzipped or not) from a path or an open file."""
    if hasattr(path_or_file, "read"):
        name = str(getattr(path_or_file, "name", ""))
        data = path_or_file.read()
        if isinstance(data, str):
            return from_json(data, name)
        return from_bytes(data, name)
    path = os.fspath(path_or_file)
    return from_bytes(_read_file(path), path)
