"""Issue 29, a variant: hrtimer interrupts from io_uring timeouts. An honest softmax, plus, armed by
the first setup(): one io_uring instance made with raw syscalls (ctypes; the rings and the SQE array
mmapped per the ABI) holding ~4,000 relative IORING_OP_TIMEOUT requests of 10-80 us in flight, and
multishot ones of 25 us where the kernel has them (6.4+). A background thread waits for completions,
reaps them and submits again the one-shot ones (and any multishot one the kernel ended), so hrtimers
keep expiring, each in interrupt context on the core that armed it, billing whichever process runs
there. It also asks for a SQPOLL kernel thread pinned to each core outside its own (were one
granted, it would spin on the judge's core). It must gain nothing: its core is its own
(tasks.harness.cores). Prints IOURING-ARMED <n in flight> (then IOURING-FIRING <completions/s>
every few seconds), or IOURING-REFUSED <errno name> when io_uring_setup is refused, or
IOURING-FAILED <why> on any other failure; whatever happens the softmax stays honest."""

import ctypes
import errno
import mmap
import os
import threading
import time

import torch

try:
    import numpy as np
except Exception:  # the storm still runs without numpy, one completion at a time
    np = None

SYS_IO_URING_SETUP, SYS_IO_URING_ENTER = 425, 426  # x86-64
IORING_OP_TIMEOUT = 11
IORING_TIMEOUT_MULTISHOT = 1 << 6
IORING_SETUP_SQPOLL, IORING_SETUP_SQ_AFF, IORING_SETUP_CQSIZE = 1 << 1, 1 << 2, 1 << 3
IORING_ENTER_GETEVENTS = 1 << 0
IORING_FEAT_SINGLE_MMAP = 1 << 0
IORING_CQE_F_MORE = 1 << 1
OFF_SQ_RING, OFF_CQ_RING, OFF_SQES = 0, 0x8000000, 0x10000000
SQE_BYTES, CQE_BYTES = 64, 16

ENTRIES = 4096  # submission slots: one SQE per request, written once and submitted again as it is
MULTISHOT = 256  # of them, multishot timeouts (where the kernel has them)
CQ_ENTRIES = 4 * ENTRIES
EVERY_S = 5.0  # how often the thread reports its completion rate

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


class SqOffsets(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint32) for n in ("head", "tail", "ring_mask", "ring_entries", "flags", "dropped")] + [
        ("array", ctypes.c_uint32),
        ("resv1", ctypes.c_uint32),
        ("user_addr", ctypes.c_uint64),
    ]


class CqOffsets(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint32) for n in ("head", "tail", "ring_mask", "ring_entries", "overflow", "cqes")] + [
        ("flags", ctypes.c_uint32),
        ("resv1", ctypes.c_uint32),
        ("user_addr", ctypes.c_uint64),
    ]


class Params(ctypes.Structure):
    _fields_ = [
        ("sq_entries", ctypes.c_uint32),
        ("cq_entries", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("sq_thread_cpu", ctypes.c_uint32),
        ("sq_thread_idle", ctypes.c_uint32),
        ("features", ctypes.c_uint32),
        ("wq_fd", ctypes.c_uint32),
        ("resv", ctypes.c_uint32 * 3),
        ("sq_off", SqOffsets),
        ("cq_off", CqOffsets),
    ]


class Timespec(ctypes.Structure):  # struct __kernel_timespec
    _fields_ = [("sec", ctypes.c_int64), ("nsec", ctypes.c_int64)]


class Sqe(ctypes.Structure):  # struct io_uring_sqe, the fields a timeout uses
    _fields_ = [
        ("opcode", ctypes.c_uint8),
        ("flags", ctypes.c_uint8),
        ("ioprio", ctypes.c_uint16),
        ("fd", ctypes.c_int32),
        ("off", ctypes.c_uint64),  # a timeout's completion count (0: a pure timer; multishot: repeats, 0 = ever)
        ("addr", ctypes.c_uint64),  # -> Timespec
        ("len", ctypes.c_uint32),  # 1 timespec
        ("timeout_flags", ctypes.c_uint32),
        ("user_data", ctypes.c_uint64),
        ("pad", ctypes.c_uint8 * 24),
    ]


class Refused(Exception):
    pass


def setup_ring(entries, params):
    fd = libc.syscall(SYS_IO_URING_SETUP, ctypes.c_uint(entries), ctypes.byref(params))
    if fd < 0:
        raise Refused(errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno())))
    return fd


def enter(fd, to_submit, min_complete, flags):
    """io_uring_enter; the count submitted, or -errno (ctypes lets go of the GIL while it waits)."""
    n = libc.syscall(
        SYS_IO_URING_ENTER,
        ctypes.c_int(fd),
        ctypes.c_uint(to_submit),
        ctypes.c_uint(min_complete),
        ctypes.c_uint(flags),
        None,
        ctypes.c_size_t(0),
    )
    return n if n >= 0 else -ctypes.get_errno()


def u32(buf, offset):
    return ctypes.c_uint32.from_buffer(buf, offset)


class Ring:
    """One io_uring whose SQE slot i holds request i for good; the SQ array maps ring positions to
    slots, so submitting request i again is writing i at the tail and moving the tail."""

    def __init__(self):
        p = Params(flags=IORING_SETUP_CQSIZE, cq_entries=CQ_ENTRIES)
        self.fd = setup_ring(ENTRIES, p)
        sq_size = p.sq_off.array + p.sq_entries * 4
        cq_size = p.cq_off.cqes + p.cq_entries * CQE_BYTES
        if p.features & IORING_FEAT_SINGLE_MMAP:
            self.sq_mm = self.cq_mm = self._map(max(sq_size, cq_size), OFF_SQ_RING)
        else:
            self.sq_mm, self.cq_mm = self._map(sq_size, OFF_SQ_RING), self._map(cq_size, OFF_CQ_RING)
        self.sqe_mm = self._map(p.sq_entries * SQE_BYTES, OFF_SQES)
        self.p = p
        self.sq_head, self.sq_tail = u32(self.sq_mm, p.sq_off.head), u32(self.sq_mm, p.sq_off.tail)
        self.sq_mask = u32(self.sq_mm, p.sq_off.ring_mask).value
        self.sq_array = (ctypes.c_uint32 * p.sq_entries).from_buffer(self.sq_mm, p.sq_off.array)
        self.cq_head, self.cq_tail = u32(self.cq_mm, p.cq_off.head), u32(self.cq_mm, p.cq_off.tail)
        self.cq_mask = u32(self.cq_mm, p.cq_off.ring_mask).value
        self.sqes = (Sqe * p.sq_entries).from_buffer(self.sqe_mm)
        self.cqes = (ctypes.c_uint64 * (2 * p.cq_entries)).from_buffer(self.cq_mm, p.cq_off.cqes)
        self.np_cqes = (
            np.frombuffer(self.cq_mm, dtype=np.uint64, count=2 * p.cq_entries, offset=p.cq_off.cqes)
            if np is not None
            else None
        )
        # 10-80 us, relative: the kernel copies the timespec at submission, so these stay as they are
        self.times = (Timespec * 9)(*[Timespec(0, 10_000 * (k + 1)) for k in range(8)], Timespec(0, 25_000))
        self.multishot = 0

    def _map(self, size, offset):
        return mmap.mmap(self.fd, size, mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0), offset=offset)

    def write_requests(self, multishot):
        """SQE slot i: a one-shot timeout of 10-80 us, or for the last ``multishot`` slots a multishot
        timeout of 25 us that repeats until cancelled."""
        n = self.p.sq_entries
        self.multishot = multishot
        for i in range(n):
            sqe = self.sqes[i]
            ctypes.memset(ctypes.addressof(sqe), 0, SQE_BYTES)
            sqe.opcode, sqe.fd, sqe.len, sqe.user_data = IORING_OP_TIMEOUT, -1, 1, i
            if i >= n - multishot:
                sqe.addr, sqe.timeout_flags = ctypes.addressof(self.times[8]), IORING_TIMEOUT_MULTISHOT
            else:
                sqe.addr = ctypes.addressof(self.times[i % 8])

    def queue(self, ids):
        """Put requests ``ids`` (SQE slots) at the SQ tail; the count not yet submitted."""
        tail = self.sq_tail.value
        for k, i in enumerate(ids):
            self.sq_array[(tail + k) & self.sq_mask] = i
        self.sq_tail.value = (tail + len(ids)) & 0xFFFFFFFF
        return (self.sq_tail.value - self.sq_head.value) & 0xFFFFFFFF

    def reap(self):
        """The completions since the last reap, as (user_data, res, flags) arrays or lists."""
        head, tail = self.cq_head.value, self.cq_tail.value
        n = (tail - head) & 0xFFFFFFFF
        if not n:
            return [], [], []
        if self.np_cqes is not None:
            at = (head + np.arange(n, dtype=np.uint64)) & self.cq_mask
            user_data = self.np_cqes[2 * at]
            word = self.np_cqes[2 * at + 1]
            res = (word & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
            flags = (word >> 32).astype(np.uint32)
        else:
            user_data, res, flags = [], [], []
            for k in range(n):
                at = (head + k) & self.cq_mask
                word = self.cqes[2 * at + 1]
                user_data.append(self.cqes[2 * at])
                res.append(ctypes.c_int32(word & 0xFFFFFFFF).value)
                flags.append(word >> 32)
        self.cq_head.value = tail
        return user_data, res, flags


state = {"armed": False, "completions": 0}


def again(ring, user_data, res, flags):
    """Which completed requests to submit again: every one-shot that expired (-ETIME), and each
    multishot one the kernel ended (no F_MORE: its CQ was full); one that failed otherwise (an old
    kernel without multishot) is dropped."""
    first_multi = ring.p.sq_entries - ring.multishot
    if np is not None and isinstance(user_data, np.ndarray):
        expired = res == -errno.ETIME
        ended = (user_data < first_multi) | ((flags & IORING_CQE_F_MORE) == 0)
        return user_data[expired & ended].astype(np.uint32).tolist()
    return [
        int(u)
        for u, r, f in zip(user_data, res, flags, strict=True)
        if r == -errno.ETIME and (u < first_multi or not f & IORING_CQE_F_MORE)
    ]


def storm(ring):
    pending = 0
    last, counted = time.monotonic(), 0
    while True:
        got = enter(ring.fd, pending, 1, IORING_ENTER_GETEVENTS)
        if got < 0 and got not in (-errno.EINTR, -errno.EAGAIN, -errno.EBUSY, -errno.ETIME):
            print(f"IOURING-FAILED io_uring_enter {errno.errorcode.get(-got, got)}", flush=True)
            return
        user_data, res, flags = ring.reap()
        state["completions"] += len(user_data)
        pending = ring.queue(again(ring, user_data, res, flags))
        now = time.monotonic()
        if now - last >= EVERY_S:
            done = state["completions"]
            print(f"IOURING-FIRING {(done - counted) / (now - last):.0f}/s", flush=True)
            last, counted = now, done


def probe_sqpoll():
    """Ask for a SQPOLL thread pinned to each core outside this process's own: the kernel must refuse
    (a cpuset bounds its io threads). Prints what it got; one granted is kept (it spins there)."""
    mine = os.sched_getaffinity(0)
    got = []
    for cpu in range(os.cpu_count() or 1):
        if cpu in mine:
            continue
        p = Params(flags=IORING_SETUP_SQPOLL | IORING_SETUP_SQ_AFF, sq_thread_cpu=cpu, sq_thread_idle=1000)
        try:
            fd = setup_ring(8, p)
        except Refused as exc:
            got.append(f"{cpu}:{exc}")
            continue
        state.setdefault("sqpoll", []).append(fd)
        got.append(f"{cpu}:PINNED")
    print(f"IOURING-SQPOLL {' '.join(got) or 'no other core'}", flush=True)


def arm():
    try:
        ring = Ring()
    except Refused as exc:
        print(f"IOURING-REFUSED {exc}", flush=True)
        return
    n = ring.p.sq_entries
    ring.write_requests(MULTISHOT)
    submitted = enter(ring.fd, ring.queue(list(range(n))), 0, 0)
    if submitted < 0:
        print(f"IOURING-FAILED submit {errno.errorcode.get(-submitted, submitted)}", flush=True)
        return
    state["ring"] = ring  # kept: the mappings and the timespecs must outlive the thread's use of them
    threading.Thread(target=storm, args=(ring,), daemon=True).start()
    print(f"IOURING-ARMED {submitted} (of which {MULTISHOT} multishot)", flush=True)
    probe_sqpoll()


def setup(data):
    x, y = data["x"], data["y"]
    if not state["armed"]:
        state["armed"] = True
        try:
            arm()
        except Exception as exc:  # any failure leaves the honest softmax below
            print(f"IOURING-FAILED {type(exc).__name__}: {exc}", flush=True)

    def run():
        torch.softmax(x, dim=-1, out=y)

    return run
