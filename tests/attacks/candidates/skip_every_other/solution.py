"""Attack 13 (batch-and-skip): do the work on every other call only."""

import torch

_calls = [0]


def setup(data):
    x, y = data["x"], data["y"]

    def run():
        _calls[0] += 1
        if _calls[0] % 2:
            torch.softmax(x, dim=-1, out=y)

    return run
