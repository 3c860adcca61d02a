"""Reading run-iket's Perfetto trace (``iket_pid_0x<pid>.pftrace``) into the records of the JSON trace.

What run-iket writes (nvidia-cutlass-dsl 4.8.1, ``RawCaptureDecoder.export_perfetto_trace``, the same
decoder that writes the JSON trace; tests/profiling/fixtures/make_pftrace.py makes fixtures with it): a
``Trace`` of ``TracePacket`` s, each a ``TrackDescriptor`` (uuid, name, parent uuid) or a ``TrackEvent``
(slice BEGIN / END, both named, or INSTANT) at the packet's timestamp: ns, the JSON trace's clock.
No interning (interned event names are read all the same). The tracks form a tree:

    Root
    └── [GPU/Context N]                       only when the capture holds several CUDA contexts
        ├── GridK                             a launch (K counts launches by start time); its slice
        │                                     is named "kernel:NAME[ [cluster (x,y,z) only]], gridId: ID"
        └── GraphExecX LaunchN                a CUDA graph launch (the JSON's key graph_exec_X:N)
            └── NodeI: NAME, gridId: ID       one kernel of it
    (a launch) └── GPC<g> └── TPC<t>|VSM<sm> └── CTA(x, y, z) └── WarpWW   "Warp Life Time" slice
                                                                  ├── <range name>   start/end ranges
                                                                  ├── StackedRanges  push/pop ranges
                                                                  └── Marker         markers (INSTANT)

A range across warps is a slice on the CTA (or VSM) track, named "NAME: START(warp a) -> END(warp b)"
at its BEGIN and "NAME" at its END; its two ends are INSTANTs on the warps' Marker tracks that share a
flow id with it (they are not markers: the JSON trace has no marker for them). Its location is its
start's, as in the JSON trace. Slice names carry what the JSON keeps in fields, which is taken off:
" [duration=0]", "(payload=V)", "(start_payload=V, end_payload=W)", "(end_payload=W)" (the payload is
also the debug annotation ``payload_val``). The Perfetto trace has no grid or block size
(``Launch.grid``/``block`` stay None). Launches come in the JSON's order: launches by start time, then
graph launches by key and node.

A BEGIN is closed by the next END of the same name on its track: the oldest open one on start/end
tracks (IKET pairs start/end ranges first in, first out), the newest on StackedRanges. An END
without a name closes the newest open BEGIN. What stays unpaired counts in ``Launch.skipped``.

Bounds: the file is read up to ``MAX_TRACE_BYTES`` (more is an error); protowire checks every length;
tracks are placed by walking at most ``MAX_TRACK_DEPTH`` parents (a cycle is an error). Nothing in a
trace makes the reader open another file or follow anything outside the bytes it was given.
"""

from __future__ import annotations

import re
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any

from kcoral.profiling.capped import size_text
from kcoral.profiling.iket_trace import Launch, Lifetime, Loc, Marker, Range, Trace, TraceError
from kcoral.profiling.protowire import LEN, WireError, double, fields, packed_fixed64, signed64, text

MAX_TRACE_BYTES = 256 << 20
MAX_TRACK_DEPTH = 64

# --- FIELD MAP: the protobuf field numbers read here (perfetto/protos/perfetto/trace/...) ------------------
TRACE_PACKET = 1
PACKET_TIMESTAMP = 8
PACKET_SEQUENCE_ID = 10  # trusted_packet_sequence_id
PACKET_TRACK_EVENT = 11
PACKET_INTERNED_DATA = 12
PACKET_SEQUENCE_FLAGS = 13
PACKET_INCREMENTAL_STATE_CLEARED = 41
PACKET_TRACK_DESCRIPTOR = 60
SEQ_INCREMENTAL_STATE_CLEARED = 1

DESCRIPTOR_UUID = 1
DESCRIPTOR_NAME = 2
DESCRIPTOR_PARENT_UUID = 5
DESCRIPTOR_STATIC_NAME = 10

EVENT_DEBUG_ANNOTATIONS = 4
EVENT_TYPE = 9
EVENT_NAME_IID = 10
EVENT_TRACK_UUID = 11
EVENT_NAME = 23
EVENT_FLOW_IDS = 47
EVENT_TERMINATING_FLOW_IDS = 48
SLICE_BEGIN, SLICE_END, INSTANT = 1, 2, 3

INTERNED_EVENT_NAMES = 2
INTERNED_IID = 1
INTERNED_NAME = 2

ANNOTATION_NAME_IID = 1
ANNOTATION_NAME = 10
ANNOTATION_BOOL, ANNOTATION_UINT, ANNOTATION_INT, ANNOTATION_DOUBLE = 2, 3, 4, 5
ANNOTATION_STRING, ANNOTATION_POINTER = 6, 7
PAYLOAD_ANNOTATIONS = ("payload_val", "payload_type")

# --- NAME MAP: how run-iket names tracks and slices ------------------------------------------------------
# numbers are bounded ([0-9]{1,18}): int() of a hostile 10,000-digit name would raise
CONTEXT_TRACK = re.compile(r"GPU/Context (\S+)")
GRID_TRACK = re.compile(r"Grid([0-9]{1,18})")
NODE_TRACK = re.compile(r"Node([0-9]{1,18}): (.*), gridId: (.*)", re.S)
GRAPH_EXEC_TRACK = re.compile(r"GraphExec(.*) Launch(.*)", re.S)
GRAPH_KEY = "graph_exec_{}:{}"
KERNEL_SLICE = re.compile(r"kernel:(.*), gridId: (.*)", re.S)
CLUSTER_ONLY = re.compile(r" \[cluster \([^()]*\) only\]$")
VSM_TRACK = re.compile(r".*VSM([0-9]{1,18})", re.S)
CTA_TRACK = re.compile(r"CTA\((-?[0-9]{1,18}), (-?[0-9]{1,18}), (-?[0-9]{1,18})\)")
WARP_TRACK = re.compile(r"Warp([0-9]{1,18})")
NUMBER = re.compile(r"[0-9]{1,18}")
STACKED_TRACK = "StackedRanges"
LIFETIME_SLICE = "Warp Life Time"
CROSS_WARP_START = re.compile(r".*?\(warp ([0-9]{1,18})\) -> ", re.S)
ZERO_DURATION = " [duration=0]"
RANGE_PAYLOAD = re.compile(r"\((?:start_payload=[^()]*|end_payload=[^()]*|payload=[^()]*)\)$")
MARKER_PAYLOAD = re.compile(r"\(payload=[^()]*\)$")
# ----------------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Event:
    ts: int
    kind: int
    name: str
    payload: Any = None
    has_payload: bool = False
    flows: tuple[int, ...] = ()
    closed: bool = False


@dataclass(slots=True)
class _Track:
    name: str
    parent: int | None
    events: list[_Event] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Place:
    """Where a track sits: its launch track, and its level below it."""

    launch: int | None = None
    level: str = "none"  # launch | hardware (GPC, TPC|VSM, CTA) | warp | leaf (under a warp)
    loc: Loc | None = None
    cta: tuple[int, int, int] | None = None
    sm: int | None = None
    stacked: bool = False


# --- protobuf -> tracks and their events ----------------------------------------------------------------


class _Parser:
    """One pass over the packets: track descriptors, and each track's events in file order."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.tracks: dict[int, _Track] = {}
        self.events: list[tuple[int, _Event]] = []
        self.interned: dict[int, dict[int, str]] = {}

    def parse(self) -> None:
        for number, wire_type, value, end in fields(self.data):
            if number == TRACE_PACKET and wire_type == LEN:
                self._packet(value, end)
        for uuid, event in self.events:
            track = self.tracks.get(uuid)
            if track is not None:
                track.events.append(event)

    def _packet(self, start: int, end: int) -> None:
        ts: int | None = None
        seq = 0
        event: tuple[int, int] | None = None
        interned: tuple[int, int] | None = None
        cleared = False
        for number, wire_type, value, stop in fields(self.data, start, end, depth=1):
            if wire_type == LEN:
                if number == PACKET_TRACK_EVENT:
                    event = (value, stop)
                elif number == PACKET_TRACK_DESCRIPTOR:
                    self._descriptor(value, stop)
                elif number == PACKET_INTERNED_DATA:
                    interned = (value, stop)
            elif number == PACKET_TIMESTAMP:
                ts = value
            elif number == PACKET_SEQUENCE_ID:
                seq = value
            elif number == PACKET_SEQUENCE_FLAGS:
                cleared = cleared or bool(value & SEQ_INCREMENTAL_STATE_CLEARED)
            elif number == PACKET_INCREMENTAL_STATE_CLEARED:
                cleared = cleared or bool(value)
        if cleared:
            self.interned.pop(seq, None)
        if interned is not None:
            self._interned(seq, *interned)
        if event is not None and ts is not None:
            self._event(seq, ts, *event)

    def _descriptor(self, start: int, end: int) -> None:
        uuid = parent = 0
        name = ""
        for number, wire_type, value, stop in fields(self.data, start, end, depth=2):
            if wire_type == LEN:
                if number in (DESCRIPTOR_NAME, DESCRIPTOR_STATIC_NAME):
                    name = text(self.data, value, stop)
            elif number == DESCRIPTOR_UUID:
                uuid = value
            elif number == DESCRIPTOR_PARENT_UUID:
                parent = value
        if not uuid:
            return
        known = self.tracks.get(uuid)
        if known is None:
            self.tracks[uuid] = _Track(name, parent or None)
        else:  # a descriptor sent again: the later one's fields win
            known.name, known.parent = name or known.name, parent or known.parent

    def _interned(self, seq: int, start: int, end: int) -> None:
        names = self.interned.setdefault(seq, {})
        for number, wire_type, value, stop in fields(self.data, start, end, depth=2):
            if number != INTERNED_EVENT_NAMES or wire_type != LEN:
                continue
            iid, name = None, ""
            for n2, w2, v2, s2 in fields(self.data, value, stop, depth=3):
                if n2 == INTERNED_IID and w2 != LEN:
                    iid = v2
                elif n2 == INTERNED_NAME and w2 == LEN:
                    name = text(self.data, v2, s2)
            if iid is not None:
                names[iid] = name

    def _event(self, seq: int, ts: int, start: int, end: int) -> None:
        kind = track = 0
        name = ""
        name_iid: int | None = None
        event = _Event(ts, 0, "")
        flows: list[int] = []
        for number, wire_type, value, stop in fields(self.data, start, end, depth=2):
            if wire_type == LEN:
                if number == EVENT_NAME:
                    name = text(self.data, value, stop)
                elif number == EVENT_DEBUG_ANNOTATIONS:
                    self._annotation(event, value, stop)
                elif number in (EVENT_FLOW_IDS, EVENT_TERMINATING_FLOW_IDS):
                    flows.extend(packed_fixed64(self.data, value, stop))
            elif number == EVENT_TYPE:
                kind = value
            elif number == EVENT_TRACK_UUID:
                track = value
            elif number == EVENT_NAME_IID:
                name_iid = value
            elif number in (EVENT_FLOW_IDS, EVENT_TERMINATING_FLOW_IDS):
                flows.append(value)
        if not name and name_iid is not None:
            name = self.interned.get(seq, {}).get(name_iid, f"#{name_iid}")
        event.kind, event.name, event.flows = kind, name, tuple(flows)
        self.events.append((track, event))

    def _annotation(self, event: _Event, start: int, end: int) -> None:
        key = ""
        val: Any = None
        for number, wire_type, value, stop in fields(self.data, start, end, depth=3):
            if wire_type == LEN:
                if number == ANNOTATION_NAME:
                    key = text(self.data, value, stop)
                elif number == ANNOTATION_STRING:
                    val = text(self.data, value, stop)
            elif number in (ANNOTATION_UINT, ANNOTATION_POINTER):
                val = value
            elif number == ANNOTATION_INT:
                val = signed64(value)
            elif number == ANNOTATION_BOOL:
                val = bool(value)
            elif number == ANNOTATION_DOUBLE:
                val = double(value)
        if key in PAYLOAD_ANNOTATIONS:
            event.has_payload = True
            if key == "payload_val":
                event.payload = val


# --- tracks -> launches, locations ----------------------------------------------------------------------


@dataclass
class _LaunchInfo:
    graph_key: str | None
    order: tuple[Any, ...]
    kernel: str = "?"
    grid_id: Any = None
    context_id: Any = None
    launch: Launch | None = None


def _id(value: str) -> Any:
    """A grid or context id: an int when it is one (as in the JSON trace)."""
    return int(value) if NUMBER.fullmatch(value) else value


class _Places:
    """Each track's place, found by walking down from the root: launch, then CTA, then warp."""

    def __init__(self, tracks: dict[int, _Track]) -> None:
        self.tracks = tracks
        self.places: dict[int, _Place] = {}
        self.launches: dict[int, _LaunchInfo] = {}
        self._locs: dict[tuple[Any, ...], Loc] = {}

    def chain(self, uuid: int) -> list[int]:
        """The track's ancestors from the root down to it."""
        out: list[int] = []
        seen: set[int] = set()
        current: int | None = uuid
        while current is not None and current in self.tracks:
            if current in seen:
                raise TraceError(f"track {current}: its parents form a cycle")
            if len(out) >= MAX_TRACK_DEPTH:
                raise TraceError(f"track {uuid}: nested deeper than {MAX_TRACK_DEPTH} tracks")
            seen.add(current)
            out.append(current)
            current = self.tracks[current].parent
        out.reverse()
        return out

    def place(self, uuid: int) -> _Place:
        if uuid not in self.places:
            self.places[uuid] = self._walk(self.chain(uuid))
        return self.places[uuid]

    def _walk(self, chain: list[int]) -> _Place:
        launch: int | None = None
        context: Any = None
        level = "none"
        sm: int | None = None
        cta: tuple[int, int, int] | None = None
        warp: int | None = None
        for i, uuid in enumerate(chain):
            name = self.tracks[uuid].name
            if launch is None:
                if m := CONTEXT_TRACK.fullmatch(name):
                    context = _id(m[1])
                elif m := GRID_TRACK.fullmatch(name):
                    launch, level = uuid, "launch"
                    self._launch(uuid, None, int(m[1]), context)
                elif (m := NODE_TRACK.fullmatch(name)) and i > 0:
                    launch, level = uuid, "launch"
                    info = self._launch(uuid, self._graph_key(chain[i - 1]), int(m[1]), context)
                    info.kernel, info.grid_id = CLUSTER_ONLY.sub("", m[2]), _id(m[3])
            elif warp is not None:
                level = "leaf"
            elif m := WARP_TRACK.fullmatch(name):
                warp, level = int(m[1]), "warp"
            elif m := CTA_TRACK.fullmatch(name):
                cta, level = (int(m[1]), int(m[2]), int(m[3])), "hardware"
            else:
                level = "hardware"
                if cta is None and (m := VSM_TRACK.fullmatch(name)):
                    sm = int(m[1])
        loc = None
        if cta is not None and warp is not None:
            loc = self._locs.setdefault((cta, warp, sm), Loc(cta, warp, sm))
        stacked = level == "leaf" and self.tracks[chain[-1]].name == STACKED_TRACK
        return _Place(launch, level, loc, cta, sm, stacked)

    def _graph_key(self, uuid: int) -> str:
        name = self.tracks[uuid].name
        m = GRAPH_EXEC_TRACK.fullmatch(name)
        return GRAPH_KEY.format(m[1], m[2]) if m else name

    def _launch(self, uuid: int, graph_key: str | None, number: int, context: Any) -> _LaunchInfo:
        """A launch track: GridK (number K), or NodeI (number I) of the graph launch ``graph_key``."""
        if uuid not in self.launches:
            order = (0, "", number) if graph_key is None else (1, graph_key, number)  # the JSON trace's order
            self.launches[uuid] = _LaunchInfo(graph_key, order, context_id=context)
        return self.launches[uuid]

    def loc(self, cta: tuple[int, int, int], warp: int, sm: int | None) -> Loc:
        return self._locs.setdefault((cta, warp, sm), Loc(cta, warp, sm))


# --- events -> records ----------------------------------------------------------------------------------


def _key(name: str) -> str:
    """What a BEGIN and its END share: the name, up to a cross-warp range's ": START(warp a) -> ..."."""
    return name.split(": ", 1)[0]


def _pairs(events: list[_Event], lifo: bool) -> tuple[list[tuple[_Event, _Event]], int]:
    """(BEGIN, END) pairs of one track, and how many events stayed unpaired."""
    stack: list[_Event] = []
    by_key: dict[str, deque[_Event]] = defaultdict(deque)
    pairs: list[tuple[_Event, _Event]] = []
    unpaired = 0
    for ev in events:
        if ev.kind == SLICE_BEGIN:
            stack.append(ev)
            by_key[_key(ev.name)].append(ev)
        elif ev.kind == SLICE_END:
            begin: _Event | None = None
            if ev.name:
                queue = by_key.get(_key(ev.name))
                while queue and begin is None:
                    candidate = queue.pop() if lifo else queue.popleft()
                    begin = None if candidate.closed else candidate
            else:
                while stack and begin is None:
                    candidate = stack.pop()
                    begin = None if candidate.closed else candidate
            if begin is None:
                unpaired += 1
                continue
            begin.closed = True
            pairs.append((begin, ev))
            while stack and stack[-1].closed:
                stack.pop()
    return pairs, unpaired + sum(1 for ev in stack if not ev.closed)


def _range_name(begin: _Event, end: _Event) -> str:
    name = end.name or begin.name
    if begin.ts == end.ts and name.endswith(ZERO_DURATION):
        name = name[: -len(ZERO_DURATION)]
    if begin.has_payload or end.has_payload:
        name = RANGE_PAYLOAD.sub("", name)
    return name


def _marker_name(ev: _Event) -> str:
    return MARKER_PAYLOAD.sub("", ev.name) if ev.has_payload else ev.name


def _kernel(info: _LaunchInfo, events: list[_Event]) -> None:
    """Kernel name and grid id of a Grid launch, from its slice."""
    for ev in events:
        if ev.kind == SLICE_BEGIN and (m := KERNEL_SLICE.fullmatch(ev.name)):
            info.kernel, info.grid_id = CLUSTER_ONLY.sub("", m[1]), _id(m[2])
            return


def _build(tracks: dict[int, _Track]) -> list[Launch]:
    places = _Places(tracks)
    for uuid in tracks:
        places.place(uuid)
    infos = places.launches
    for uuid, info in infos.items():
        if info.graph_key is None:
            _kernel(info, tracks[uuid].events)
    ordered = sorted(infos.values(), key=lambda i: i.order)
    for index, info in enumerate(ordered):
        info.launch = Launch(index, info.grid_id, info.kernel, None, None, info.graph_key, info.context_id)

    # the ends of ranges across warps: where each flow id was seen as an INSTANT under a warp
    ends: dict[int, list[tuple[int, Loc]]] = defaultdict(list)
    for uuid, track in tracks.items():
        where = places.place(uuid)
        if where.loc is not None:
            for ev in track.events:
                if ev.kind == INSTANT and ev.flows:
                    for flow in ev.flows:
                        ends[flow].append((ev.ts, where.loc))

    for uuid, track in tracks.items():
        where = places.place(uuid)
        if where.launch is None or where.level == "launch":
            continue
        launch = infos[where.launch].launch
        assert launch is not None
        events = sorted(track.events, key=lambda ev: ev.ts)  # stable: file order within a timestamp
        pairs, unpaired = _pairs(events, lifo=where.stacked)
        launch.skipped += unpaired
        for begin, end in pairs:
            if where.level == "warp" and begin.name == LIFETIME_SLICE:
                launch.lifetimes.append(Lifetime(begin.ts, end.ts, where.loc))
            elif where.level in ("warp", "leaf"):
                launch.ranges.append(Range(_range_name(begin, end), begin.ts, end.ts, where.loc))
            else:
                loc = _start_loc(begin, ends, where, places)
                launch.ranges.append(Range(_range_name(begin, end), begin.ts, end.ts, loc))
        if where.level in ("warp", "leaf"):
            for ev in events:
                if ev.kind == INSTANT and not ev.flows:
                    launch.markers.append(Marker(_marker_name(ev), ev.ts, where.loc, ev.payload))
    return [info.launch for info in ordered if info.launch is not None]


def _start_loc(begin: _Event, ends: dict[int, list[tuple[int, Loc]]], where: _Place, places: _Places) -> Loc | None:
    """Where a range across warps starts: its flow's INSTANT at its start, else "(warp a)" in its CTA."""
    for flow in begin.flows:
        for ts, loc in ends.get(flow, ()):
            if ts == begin.ts:
                return loc
    m = CROSS_WARP_START.match(begin.name)
    if m and where.cta is not None:
        return places.loc(where.cta, int(m[1]), where.sm)
    return None


def from_bytes(data: bytes, source: str = "") -> Trace:
    """The trace in ``data`` (a serialized perfetto.protos.Trace written by run-iket)."""
    what = source or "trace"
    if len(data) > MAX_TRACE_BYTES:
        raise TraceError(f"{what}: larger than {size_text(MAX_TRACE_BYTES)}, the most a Perfetto trace is read to")
    if not data:
        raise TraceError(f"{what}: empty file")
    parser = _Parser(data)
    try:
        parser.parse()
        launches = _build(parser.tracks)
    except WireError as exc:
        raise TraceError(f"{what}: not a valid Perfetto trace: {exc}") from None
    except TraceError as exc:
        raise TraceError(f"{what}: not a valid Perfetto trace: {exc}") from None
    if not launches and not any(t.name == "Root" and t.parent is None for t in parser.tracks.values()):
        raise TraceError(f"{what}: a Perfetto trace, but not one of IKET's (no Root track, no launch)")
    return Trace(shape="perfetto", launches=launches, source=source)
