"""Issue 11 (no false flags): an honest softmax, plus a thread that burns CPU between the calls of the
first callable that is timed (called more than once), as passing noise on a busy host would, and never
again after it. The first measurement is flagged for CPU outside the calls; that flag must not stand
on one measurement: the workload is measured again (a new setup), is clear, and the evaluation passes
like an honest run."""

import threading
import time

import torch

_between = threading.Event()
_noisy = [None]  # the one callable whose gaps are burnt


def burn():
    while True:
        _between.wait()
        end = time.perf_counter() + 0.002
        while time.perf_counter() < end:
            pass


threading.Thread(target=burn, daemon=True).start()


def setup(data):
    x, y = data["x"], data["y"]
    calls = [0]

    def run():
        _between.clear()
        torch.softmax(x, dim=-1, out=y)
        calls[0] += 1
        if calls[0] >= 2 and _noisy[0] in (None, run):
            _noisy[0] = run
            _between.set()

    return run
