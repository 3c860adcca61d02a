"""Attack 4 (exit early): correct untimed calls, but os._exit(0) from the first timed call, so the
harness never writes its results and the process still exits 0."""

import os
import sys

import torch


def setup(data):
    x, y = data["x"], data["y"]

    def run():
        if sys._getframe(1).f_code.co_filename.endswith("timing.py"):
            os._exit(0)
        torch.softmax(x, dim=-1, out=y)

    return run
