"""What a call's round trip costs when it crosses to another core, against one that stays on the caller's.

The judge times every call as a round trip from the supervisor. On a lease of 2 cores the baseline's
and the empty call's workers share the supervisor's core while the candidate's worker has the other
(tasks.harness.cores), so only the candidate's calls cross cores. This measures, on this host, a busy
call of W us answered through a pipe by a process on the caller's core and by one on another core: the
caller blocking for the answer or polling for it (the supervisor polls: tasks.harness.measure), with and
without a process of idle priority (SCHED_IDLE) keeping the callee's core from halting between calls.

Usage: python3 bench/core_handoff.py [--work-us 0,300,1000,3000] [--calls 1500]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time


def _awake(core: int) -> int:
    """A child of idle priority spinning on ``core`` (its pid)."""
    pid = os.fork()
    if pid == 0:
        os.sched_setaffinity(0, {core})
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        while True:
            pass
    return pid


def round_trip_us(caller: int, callee: int, work_us: float, calls: int, poll: bool) -> float:
    """Median us from the caller's write to its read of the answer (a gap of 0.5 ms between calls)."""
    ask_r, ask_w = os.pipe()
    ans_r, ans_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.sched_setaffinity(0, {callee})
        while os.read(ask_r, 1) == b"g":
            t = time.perf_counter()
            while time.perf_counter() - t < work_us / 1e6:
                pass
            os.write(ans_w, b"k")
        os._exit(0)
    os.sched_setaffinity(0, {caller})
    os.set_blocking(ans_r, not poll)
    times = []
    for _ in range(calls):
        time.sleep(0.0005)
        t = time.perf_counter()
        os.write(ask_w, b"g")
        while True:
            try:
                os.read(ans_r, 1)
                break
            except BlockingIOError:
                pass
        times.append(time.perf_counter() - t)
    os.write(ask_w, b"q")
    os.waitpid(pid, 0)
    for fd in (ask_r, ask_w, ans_r, ans_w):
        os.close(fd)
    return statistics.median(times) * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work-us", default="0,300,1000,3000")
    parser.add_argument("--calls", type=int, default=1500)
    args = parser.parse_args()
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        print("needs two cores")
        return 2
    a, b = cores[0], cores[1]
    print(f"caller on core {a}; the other core {b}; medians of {args.calls} calls, us")
    print("work_us | same core | other core, blocking | other core, polled | polled, callee's core kept awake")
    for work in (float(w) for w in args.work_us.split(",")):
        same = round_trip_us(a, a, work, args.calls, poll=False)
        blocking = round_trip_us(a, b, work, args.calls, poll=False)
        polled = round_trip_us(a, b, work, args.calls, poll=True)
        spinner = _awake(b)
        try:
            awake = round_trip_us(a, b, work, args.calls, poll=True)
        finally:
            os.kill(spinner, 9)
            os.waitpid(spinner, 0)
        print(f"{work:7.0f} | {same:9.1f} | {blocking:9.1f} | {polled:9.1f} | {awake:9.1f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
