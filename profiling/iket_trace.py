"""IKET traces: their records (:class:`Trace`) and the JSON trace's reader (``iket_pid_0x<pid>.trace.json``
from ``run-iket ... --postprocess json`` or ``all``); the Perfetto trace (``.pftrace``, ``--postprocess
perfetto`` or ``all``) is iket_perfetto's. iket_load's ``load`` tells them apart and reads either, gzipped
or not (``.pftrace.gz``, beside run-iket's HTML viewer). Both give the same records.

Two JSON shapes are accepted (the schema is experimental and changes between versions):

* plain: names and locations inline — ranges have ``rangeName`` and ``warpLocs: [{smId, ctaId, warpId}]``,
  markers ``markerName`` and ``location``, warp lifetimes ``warpLocation``;
* interned: a top-level ``stringTable`` and ``locationTable`` — ranges have ``rangeNameIdx`` and
  ``warpLocIdxs``, markers ``markerNameIdx`` and ``locIdx``, warp lifetimes ``locIdx``.

Launches come from ``launches[]`` and from ``graphLaunches`` (``{key: [launch, ...]}``). Timestamps
are integers in ns, trace-local. Every field name this module reads is in the FIELD MAP below: adjust
it there when the format changes. Unknown fields are ignored; a record missing its timestamps is
skipped and counted in ``Launch.skipped``.

Memory: the JSON is loaded once (``json.load`` on the file); each launch is converted to compact
records and its raw dict dropped before the next one, so at most one raw copy is held.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

# --- FIELD MAP: the JSON names read here, first match wins -------------------------------------------------
TOP_LAUNCHES = ("launches",)
TOP_GRAPH_LAUNCHES = ("graphLaunches",)
TOP_STRINGS = ("stringTable",)
TOP_LOCATIONS = ("locationTable",)

LAUNCH_GRID_ID = ("gridId",)
LAUNCH_CONTEXT_ID = ("contextId",)
LAUNCH_KERNEL = ("kernelName",)
LAUNCH_KERNEL_IDX = ("kernelNameIdx",)
LAUNCH_GRID_DIMS = (("gridDimX", "gridDimY", "gridDimZ"),)
LAUNCH_BLOCK_DIMS = (("blockDimX", "blockDimY", "blockDimZ"),)
LAUNCH_GRID_LIST = ("gridDim", "grid")  # alternatively a [x, y, z] list
LAUNCH_BLOCK_LIST = ("blockDim", "block")
LAUNCH_RANGES = ("ranges",)
LAUNCH_MARKERS = ("markers",)
LAUNCH_LIFETIMES = ("warpLifetimes",)

RANGE_NAME = ("rangeName", "name")
RANGE_NAME_IDX = ("rangeNameIdx", "nameIdx")
RANGE_START = ("startTs", "start")
RANGE_END = ("endTs", "end")
RANGE_LOCS = ("warpLocs", "locations")  # list of inline locations
RANGE_LOC_IDXS = ("warpLocIdxs", "locIdxs")  # list of locationTable indices
RANGE_LOC = ("warpLocation", "location")  # one inline location
RANGE_LOC_IDX = ("locIdx", "warpLocIdx")

MARKER_NAME = ("markerName", "name")
MARKER_NAME_IDX = ("markerNameIdx", "nameIdx")
MARKER_TS = ("timestamp", "ts", "startTs")
MARKER_LOC = ("location", "warpLocation")
MARKER_LOC_IDX = ("locIdx", "warpLocIdx")
MARKER_PAYLOAD = ("payloadVal", "payload")

LIFETIME_START = ("startTs", "start")
LIFETIME_END = ("endTs", "end")
LIFETIME_LOC = ("warpLocation", "location")
LIFETIME_LOC_IDX = ("locIdx", "warpLocIdx")

LOC_SM = ("smId",)
LOC_CTA = ("ctaId", "cta")  # [x, y, z] (or a single int)
LOC_WARP = ("warpId", "warp")
#: warp role: a name, or an index into stringTable (set by instrumentation that records roles)
ROLE_NAME = ("warpRole", "role", "warpRoleName")
ROLE_IDX = ("warpRoleIdx", "roleIdx")
# ----------------------------------------------------------------------------------------------------------


def _get(d: dict[str, Any], names: tuple[str, ...], default: Any = None) -> Any:
    for n in names:
        if n in d:
            return d[n]
    return default


@dataclass(frozen=True, slots=True)
class Loc:
    cta: tuple[int, int, int]
    warp: int
    sm: int | None = None
    role: str | None = None


@dataclass(slots=True)
class Range:
    name: str
    start: int
    end: int
    loc: Loc | None

    @property
    def duration(self) -> int:
        return self.end - self.start


@dataclass(slots=True)
class Marker:
    name: str
    ts: int
    loc: Loc | None
    payload: Any = None


@dataclass(slots=True)
class Lifetime:
    start: int
    end: int
    loc: Loc | None


@dataclass
class Launch:
    index: int
    grid_id: Any
    kernel: str
    grid: tuple[int, int, int] | None
    block: tuple[int, int, int] | None
    graph_key: str | None = None
    context_id: Any = None
    ranges: list[Range] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)
    lifetimes: list[Lifetime] = field(default_factory=list)
    skipped: int = 0

    def has_roles(self) -> bool:
        return any(r.loc is not None and r.loc.role is not None for r in self.ranges)


@dataclass
class Trace:
    shape: str  # "plain" | "interned" (JSON) | "perfetto" | "proton" (profiling.proton_trace)
    launches: list[Launch]
    source: str = ""
    #: what the records' times count: "ns" (IKET) or "cycles" (SM clock cycles: Proton)
    unit: str = "ns"


class TraceError(ValueError):
    """Not an IKET trace (or one this reader cannot make sense of)."""


class _Tables:
    def __init__(self, strings: list[Any] | None, locations: list[Any] | None) -> None:
        self.strings = strings or []
        self.raw_locations = locations or []
        self._locs: dict[Any, Loc | None] = {}

    def string(self, idx: Any) -> str | None:
        if isinstance(idx, int) and 0 <= idx < len(self.strings):
            return str(self.strings[idx])
        return None

    def loc_inline(self, d: Any) -> Loc | None:
        if not isinstance(d, dict):
            return None
        cta = _get(d, LOC_CTA)
        if isinstance(cta, list | tuple):
            cta_t = tuple((list(int(c) for c in cta) + [0, 0, 0])[:3])
        elif isinstance(cta, int):
            cta_t = (cta, 0, 0)
        else:
            cta_t = (0, 0, 0)
        role = _get(d, ROLE_NAME)
        if role is None:
            role = self.string(_get(d, ROLE_IDX))
        warp = _get(d, LOC_WARP, -1)
        sm = _get(d, LOC_SM)
        key = (cta_t, warp, sm, role)
        if key not in self._locs:
            self._locs[key] = Loc(
                cta_t,  # type: ignore[arg-type]
                int(warp) if isinstance(warp, int) else -1,
                sm if isinstance(sm, int) else None,
                None if role is None else str(role),
            )
        return self._locs[key]

    def loc_index(self, idx: Any) -> Loc | None:
        if not isinstance(idx, int) or not 0 <= idx < len(self.raw_locations):
            return None
        key = ("idx", idx)
        if key not in self._locs:
            self._locs[key] = self.loc_inline(self.raw_locations[idx])
        return self._locs[key]


def _dims(
    raw: dict[str, Any], triples: tuple[tuple[str, str, str], ...], lists: tuple[str, ...]
) -> tuple[int, int, int] | None:
    for names in triples:
        if all(n in raw for n in names):
            try:
                return tuple(int(raw[n]) for n in names)  # type: ignore[return-value]
            except (TypeError, ValueError):
                return None
    value = _get(raw, lists)
    if isinstance(value, list | tuple) and value:
        return tuple((list(int(v) for v in value) + [1, 1, 1])[:3])  # type: ignore[return-value]
    return None


def _ts(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def _loc(raw: dict[str, Any], inline_names: tuple[str, ...], idx_names: tuple[str, ...], tables: _Tables) -> Loc | None:
    """A record's location: written inline, else an index into the location table."""
    inline = _get(raw, inline_names)
    if inline is not None:
        return tables.loc_inline(inline)
    return tables.loc_index(_get(raw, idx_names))


def _range_loc(raw: dict[str, Any], tables: _Tables) -> Loc | None:
    locs = _get(raw, RANGE_LOCS)
    if isinstance(locs, list) and locs:
        return tables.loc_inline(locs[0])
    idxs = _get(raw, RANGE_LOC_IDXS)
    if isinstance(idxs, list) and idxs:
        return tables.loc_index(idxs[0])
    return _loc(raw, RANGE_LOC, RANGE_LOC_IDX, tables)


def _name(raw: dict[str, Any], names: tuple[str, ...], idx_names: tuple[str, ...], tables: _Tables) -> str:
    name = _get(raw, names)
    if isinstance(name, str):
        return name
    resolved = tables.string(_get(raw, idx_names))
    if resolved is not None:
        return resolved
    idx = _get(raw, idx_names)
    return f"#{idx}" if idx is not None else "?"


def convert_launch(raw: dict[str, Any], tables: _Tables, index: int, graph_key: str | None = None) -> Launch:
    kernel = _get(raw, LAUNCH_KERNEL)
    if not isinstance(kernel, str):
        kernel = tables.string(_get(raw, LAUNCH_KERNEL_IDX)) or "?"
    launch = Launch(
        index=index,
        grid_id=_get(raw, LAUNCH_GRID_ID),
        kernel=kernel,
        grid=_dims(raw, LAUNCH_GRID_DIMS, LAUNCH_GRID_LIST),
        block=_dims(raw, LAUNCH_BLOCK_DIMS, LAUNCH_BLOCK_LIST),
        graph_key=graph_key,
        context_id=_get(raw, LAUNCH_CONTEXT_ID),
    )
    for r in _get(raw, LAUNCH_RANGES) or []:
        start = _ts(_get(r, RANGE_START)) if isinstance(r, dict) else None
        end = _ts(_get(r, RANGE_END)) if isinstance(r, dict) else None
        if start is None or end is None:
            launch.skipped += 1
            continue
        launch.ranges.append(Range(_name(r, RANGE_NAME, RANGE_NAME_IDX, tables), start, end, _range_loc(r, tables)))
    for m in _get(raw, LAUNCH_MARKERS) or []:
        ts = _ts(_get(m, MARKER_TS)) if isinstance(m, dict) else None
        if ts is None:
            launch.skipped += 1
            continue
        loc = _loc(m, MARKER_LOC, MARKER_LOC_IDX, tables)
        launch.markers.append(Marker(_name(m, MARKER_NAME, MARKER_NAME_IDX, tables), ts, loc, _get(m, MARKER_PAYLOAD)))
    for w in _get(raw, LAUNCH_LIFETIMES) or []:
        start = _ts(_get(w, LIFETIME_START)) if isinstance(w, dict) else None
        end = _ts(_get(w, LIFETIME_END)) if isinstance(w, dict) else None
        if start is None or end is None:
            launch.skipped += 1
            continue
        launch.lifetimes.append(Lifetime(start, end, _loc(w, LIFETIME_LOC, LIFETIME_LOC_IDX, tables)))
    return launch


def _raw_launches(doc: dict[str, Any]) -> Iterator[tuple[list[Any], int, str | None]]:
    """(owning list, index, graph key) for every raw launch, so each can be dropped after conversion."""
    launches = _get(doc, TOP_LAUNCHES)
    if isinstance(launches, list):
        for i in range(len(launches)):
            yield launches, i, None
    graphs = _get(doc, TOP_GRAPH_LAUNCHES)
    if isinstance(graphs, dict):
        for key, items in graphs.items():
            if isinstance(items, list):
                for i in range(len(items)):
                    yield items, i, str(key)


def from_document(doc: Any, source: str = "") -> Trace:
    """Convert a loaded JSON document; raw launches are released as they are converted."""
    if not isinstance(doc, dict) or not (
        _get(doc, TOP_LAUNCHES) is not None or _get(doc, TOP_GRAPH_LAUNCHES) is not None
    ):
        raise TraceError(f"{source or 'document'}: not an IKET JSON trace (no launches)")
    strings = _get(doc, TOP_STRINGS)
    locations = _get(doc, TOP_LOCATIONS)
    tables = _Tables(strings if isinstance(strings, list) else None, locations if isinstance(locations, list) else None)
    shape = "interned" if strings is not None or locations is not None else "plain"
    launches: list[Launch] = []
    for owner, i, key in _raw_launches(doc):
        raw = owner[i]
        if isinstance(raw, dict):
            launches.append(convert_launch(raw, tables, len(launches), key))
        owner[i] = None  # drop the raw copy
    return Trace(shape=shape, launches=launches, source=source)
