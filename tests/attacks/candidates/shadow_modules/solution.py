"""Attack 3 (shadowing): torch.py, numpy.py and statistics.py sit next to this file; if the harness
imported any of them instead of the real module they would print SHADOW-LOADED and fake results.
The solution itself is honest."""

import torch


def setup(data):
    x, y = data["x"], data["y"]

    def run():
        torch.softmax(x, dim=-1, out=y)

    return run
