"""Issue 29 (work the kernel bills to nobody): an honest softmax, plus the interrupt storm of storm.py
armed in setup. It must gain nothing: its core is its own (tasks.harness.cores)."""

import storm
import torch


def setup(data):
    x, y = data["x"], data["y"]
    storm.arm()

    def run():
        torch.softmax(x, dim=-1, out=y)

    return run
