"""Issue 29, a variant: POSIX interval timers with signals at 2 kHz from this worker and a thread
that keeps re-arming one-shot timers, so that the kernel's timer and signal work lands on the cores
this container runs on (and, were they shared, on the judge's). An honest softmax otherwise; it must
gain nothing. Prints SIGNALS-ARMED."""

import signal
import threading
import time

import torch

count = [0]


def tick(signum, frame):
    count[0] += 1


def rearm():
    while True:
        signal.setitimer(signal.ITIMER_PROF, 0.0003)
        time.sleep(0.0005)


def setup(data):
    x, y = data["x"], data["y"]
    if not count[0]:
        signal.signal(signal.SIGALRM, tick)
        signal.signal(signal.SIGPROF, tick)
        signal.setitimer(signal.ITIMER_REAL, 0.0005, 0.0005)
        threading.Thread(target=rearm, daemon=True).start()
        count[0] = 1
        print("SIGNALS-ARMED", flush=True)

    def run():
        torch.softmax(x, dim=-1, out=y)

    return run
