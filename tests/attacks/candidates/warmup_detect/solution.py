"""Attack 13 (warm-up detection): correct for the first 6 calls (holdout probes and the first
workload checks), then stop writing the output."""

import torch

_calls = [0]


def setup(data):
    x, y = data["x"], data["y"]

    def run():
        _calls[0] += 1
        if _calls[0] <= 6:
            torch.softmax(x, dim=-1, out=y)

    return run
