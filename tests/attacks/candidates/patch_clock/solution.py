"""Attack 3 (tamper): replace time.perf_counter_ns and torch.cuda.Event with clocks that run at a
third of the speed, so every timed call looks 3x faster. Must be flagged as tampering."""

import time

import torch

_real = time.perf_counter_ns
_t0 = _real()


def slow_clock():
    return _t0 + (_real() - _t0) // 3


class FakeEvent:
    def __init__(self, *a, **k):
        self.t = 0

    def record(self, *a):
        self.t = slow_clock()

    def synchronize(self):
        pass

    def elapsed_time(self, other):
        return (other.t - self.t) / 1e6


time.perf_counter_ns = slow_clock
torch.cuda.Event = FakeEvent


def setup(data):
    x, y = data["x"], data["y"]

    def run():
        torch.softmax(x, dim=-1, out=y)

    return run
