"""Attack 3/4 (claims in the answers): wrap this worker's channel so every answer it sends carries
timing claims (0.01 ms per call, "stable", no mismatch) and replace this process's clocks. The
supervisor reads only ok/error from a worker: the score must be the honest one."""

import time

import torch

from kcoral.tasks.harness.channel import Channel

_send = Channel.send


def send(self, message, fds=None):
    message = {**message, "ms": 0.01, "kernel_ms": [0.01] * 50, "stopped_by": "stable", "mismatch": None}
    return _send(self, message, fds)


Channel.send = send
time.perf_counter_ns = lambda: 0
time.monotonic = lambda: 0.0


def setup(data):
    x, y = data["x"], data["y"]

    def run():
        torch.softmax(x, dim=-1, out=y)

    return run
