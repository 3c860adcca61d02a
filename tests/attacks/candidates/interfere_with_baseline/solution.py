"""Issue 8, classes 2 and 8 (slow the baseline): an honest kernel, plus background threads that keep
the CPU busy whenever this worker is not being called (while the baseline's calls run on the same
cores), and torch.softmax (the baseline's op) patched to run twice in this process. The baseline runs
in the supervisor's container; the CPU used outside this worker's calls must be flagged."""

import threading
import time

import torch

_busy = threading.Event()
_softmax = torch.softmax


def slowed(*args, **kwargs):
    _softmax(*args, **kwargs)
    return _softmax(*args, **kwargs)


torch.softmax = slowed


def burn():
    while True:
        if _busy.is_set():
            time.sleep(0.0005)
            continue
        end = time.perf_counter() + 0.002
        while time.perf_counter() < end:
            pass


for _ in range(2):
    threading.Thread(target=burn, daemon=True).start()


def setup(data):
    x, y = data["x"], data["y"]

    def run():
        _busy.set()
        _softmax(x, dim=-1, out=y)
        _busy.clear()

    return run
