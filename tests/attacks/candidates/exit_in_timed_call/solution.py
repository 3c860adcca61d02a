"""Attack 4 (exit early): correct on a callable's first call (the untimed check), then os._exit(0) on
its second call (the first timed one), hoping the evaluation ends with what was measured so far."""

import os

import torch


def setup(data):
    x, y = data["x"], data["y"]
    calls = [0]

    def run():
        calls[0] += 1
        if calls[0] > 1:
            os._exit(0)
        torch.softmax(x, dim=-1, out=y)

    return run
