"""Red team: a forked helper precomputes softmax rows of the coming call while the supervisor is still
writing its inputs (and flushing), starting just after a scheduler tick so that the cgroup's CPU counter
(brought up to date only at ticks and context switches) shows nothing of it until the call has begun:
the judge's 'CPU while the inputs were written' figure stays ~0. A separate process: no GIL between the
helper and the worker's answer path."""

import ctypes
import json
import os
import select
import socket
import struct
import sys
import time

import torch

HERE = os.path.dirname(__file__)
BLOCK = 128
POLL = 0.0008
POLLSTART = 4_000_000
TICK = 4_000_000
CAP = 0.8  # the share of the rows the helper may do before the call
PIPE = 0.0  # no early answer from inside the call (a separate attack)
_ns = time.monotonic_ns
P = {"pid": None, "nside": 0, "chan": None}


def _frame_with(*names):
    f = sys._getframe()
    while f is not None:
        if all(n in f.f_locals for n in names):
            return f.f_locals
        f = f.f_back
    return None


def _start_child():
    req_r, req_w = os.pipe()
    ack_r, ack_w = os.pipe()
    fa, fb = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    chan = _frame_with("chan")["chan"]
    pid = os.fork()
    if pid == 0:
        try:
            os.close(req_w)
            os.close(ack_r)
            fa.close()
            ctypes.CDLL(None).prctl(1, 9)  # PR_SET_PDEATHSIG SIGKILL
            _child(req_r, ack_w, fb, chan.sock.fileno())
        except BaseException:
            import traceback

            print("FD-CHILD-DIED " + traceback.format_exc().replace("\n", " | "), flush=True)
        finally:
            os._exit(0)
    os.close(req_r)
    os.close(ack_w)
    fb.close()
    P.update(pid=pid, req_w=req_w, ack_r=ack_r, fdsock=fa)


def _learn_phase():
    fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
    last = os.pread(fd, 64, 0).split()[0]
    marks = []
    end = _ns() + 30_000_000
    while _ns() < end:
        v = os.pread(fd, 64, 0).split()[0]
        if v != last:
            marks.append(_ns())
            last = v
    os.close(fd)
    return marks[-1] if marks else None


def _child(req, ack, fdsock, chanfd):
    print("FD-CHILD-START", flush=True)
    from kcoral.tasks.harness import shared

    if os.path.exists(os.path.join(HERE, "IDLE")):
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    else:
        os.setpriority(os.PRIO_PROCESS, 0, 19)
    torch.set_num_threads(1)
    base = _learn_phase()
    print("FD-CHILD-PHASE", base, flush=True)
    sides = {}
    ncalls = 0
    gaps = []
    last_end = 0
    stats = {"det": 0, "wait": 0, "rows": 0, "to": 0, "calls": 0}
    log = []

    def take_sides():
        while select.select([fdsock], [], [], 0)[0]:
            msg, fds, _, _ = socket.recv_fds(fdsock, 65536, 4)
            if not msg:
                return
            d = json.loads(msg)
            x = shared.attach(d["xw"], fds[0], "cpu")
            y = shared.attach(d["yw"], fds[1], "cpu")
            for f in fds:
                os.close(f)
            n = x.shape[0]
            sides[d["id"]] = {
                "x": x,
                "y": y,
                "xa": x.numpy(),
                "n": n,
                "calls": 0,
                "last": 0,
                "ends": list(range(BLOCK, n + 1, BLOCK)),
                "old0": None,
                "oldlast": None,
            }

    def read_req(timeout):
        """A request if one comes within timeout (None: block); ('C'|'E', id) or None."""
        if timeout is not None and not select.select([req], [], [], max(timeout, 0))[0]:
            return None
        b = os.read(req, 8)
        if len(b) < 5:
            os._exit(0)
        return chr(b[0]), struct.unpack("<i", b[1:5])[0]

    pending = None
    while True:
        m = pending or read_req(None)
        pending = None
        take_sides()
        if stats["calls"] < 3:
            print("FD-CHILD-MSG", m, len(sides), flush=True)
        stats["calls"] += 1
        op, sid = m
        if op == "C":
            os.write(ack, struct.pack("<i", 0))
            continue
        # a call ended on side sid
        now = _ns()
        s = sides.get(sid)
        ncalls += 1
        if s is not None:
            s["calls"] += 1
            s["last"] = ncalls
            xa = s["xa"]
            s["old0"] = float(xa[0, 0])
            s["oldlast"] = [float(xa[e - 1, -1]) for e in s["ends"]]
        if len(log) >= 4:  # often: the test reads how many rows it did early
            print("FD", stats, " ".join(log), flush=True)
            log.clear()
        same = gaps[-2::-2][:3]
        wait = (min(same) if same else 0) - POLLSTART
        m = read_req(wait / 1e9) if wait > 0 else None
        if m is not None:
            pending = m
            if m[0] == "C" and last_end:
                pass
            _note_gap = None
        live = [v for v in sides.values() if v["calls"] >= 2 and ncalls - v["last"] <= 8]
        side = None
        deadline = _ns() + 30_000_000
        while pending is None and side is None and live and _ns() < deadline:
            for v in live:
                if v["xa"][0, 0] != v["old0"]:
                    side = v
                    break
            else:
                m = read_req(POLL)
                if m is not None:
                    pending = m
        if side is None:
            why = "N" if not live else ("T" if pending is None else "P%.1f" % ((_ns() - now) / 1e6))
            stats["to"] += pending is None
            # wait for the call's request, answer 0
            m = pending or read_req(None)
            pending = None
            if m[0] == "C":
                gaps.append(_ns() - now)
                os.write(ack, struct.pack("<i", 0))
                log.append(why + "/%.1f" % (wait / 1e6))
                continue
            pending = m
            continue
        stats["det"] += 1
        det = _ns()
        if base is not None:
            t = base + ((det - base) // TICK + 1) * TICK
            if t - det < 3_000_000:
                stats["wait"] += 1
                m = read_req((t - det + 20_000) / 1e9)
                if m is not None:
                    pending = m
        r = 0
        bi = 0
        cap = int(side["n"] * CAP) // BLOCK * BLOCK
        xa, x, y, ends = side["xa"], side["x"], side["y"], side["ends"]
        while pending is None and r < cap:
            e = ends[bi]
            if xa[e - 1, -1] != side["oldlast"][bi]:
                torch.softmax(x[r:e], dim=-1, out=y[r:e])
                r = e
                bi += 1
            if select.select([req], [], [], 0)[0]:
                pending = read_req(None)
        while pending is None:  # spin (no context switch: nothing billed yet) until the call asks
            if select.select([req], [], [], 0)[0]:
                pending = read_req(None)
        op, csid = pending
        pending = None
        if op == "C":
            gaps.append(_ns() - now)
            mine = sides.get(csid) is side
            os.write(ack, struct.pack("<i", r if mine else 0))
            stats["rows"] += r if mine else 0
            log.append(f"{r if mine else -1}/{(_ns() - det) / 1e6:.1f}")
        else:
            pending = (op, csid)


def setup(data):
    x, y = data["x"], data["y"]
    if x.dim() != 2 or x.shape[0] < 2048 or x.shape[0] % BLOCK:

        def plain():
            torch.softmax(x, dim=-1, out=y)

        return plain
    loc = _frame_with("message", "fds")
    msg, fds = loc["message"], loc["fds"]
    wires = msg["buffers"]
    idx = {w["name"]: i for i, w in enumerate(wires)}
    if P["pid"] is None:
        _start_child()
    sid = P["nside"]
    P["nside"] += 1
    doc = json.dumps({"id": sid, "xw": wires[idx["x"]], "yw": wires[idx["y"]]}).encode()
    socket.send_fds(P["fdsock"], [doc], [fds[idx["x"]], fds[idx["y"]]])
    req_w, ack_r = P["req_w"], P["ack_r"]
    tag = struct.pack("<i", sid) + b"\0\0\0"
    n = x.shape[0]
    k = int(PIPE * n) // BLOCK * BLOCK
    chan = _frame_with("chan")["chan"]
    st = P
    if PIPE and "orig" not in P:
        orig = chan.send
        P.update(orig=orig, skip=0)

        def send(message, fds=None):
            if P["skip"] and isinstance(message, dict) and message.get("ok") is True and not fds:
                P["skip"] -= 1
                return None
            return orig(message, fds)

        chan.send = send

    def run():
        os.write(req_w, b"C" + tag)
        r = struct.unpack("<i", os.read(ack_r, 4))[0] if select.select([ack_r], [], [], 0.05)[0] else 0
        P["last_r"] = r
        if PIPE and r < k:
            torch.softmax(x[r:k], dim=-1, out=y[r:k])
            st["orig"]({"ok": True, "at": time.monotonic_ns()})
            st["skip"] += 1
            rr = k
            while rr < n:
                e = min(rr + BLOCK, n)
                torch.softmax(x[rr:e], dim=-1, out=y[rr:e])
                rr = e
        elif r < n:
            torch.softmax(x[r:], dim=-1, out=y[r:])
        os.write(req_w, b"E" + tag)

    return run
