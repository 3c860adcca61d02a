"""Attack 3 (tamper): replace tasks.harness.timing.Timer.__call__ with one that reports a third
of the candidate's time (the baseline's calls are timed honestly). Must be flagged."""

import time

import torch

from tasks.harness import timing

MINE = set()


def fake_call(self, fn):
    t0 = time.perf_counter_ns()
    fn()
    ms = (time.perf_counter_ns() - t0) / 1e6
    return ms / 3 if fn in MINE else ms


timing.Timer.__call__ = fake_call


def setup(data):
    x, y = data["x"], data["y"]

    def run():
        torch.softmax(x, dim=-1, out=y)

    MINE.add(run)
    return run
