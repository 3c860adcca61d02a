"""Attack 3 (tamper, sneaky): keep the checks.compare function object (so an identity check sees
nothing) but swap its __code__ for one that always agrees; then compute only a sixth of the rows
inside timed calls. The judge's calls are complete, so only the timing claims lie."""

import sys

import torch

from tasks.harness import checks


def always_ok(name, out, ref, tol):
    return None, {}


checks.compare.__code__ = always_ok.__code__


def timed():
    return sys._getframe(2).f_code.co_filename.endswith("timing.py")


def setup(data):
    x, y = data["x"], data["y"]

    def run():
        n = max(1, x.shape[0] // 6) if timed() else x.shape[0]
        torch.softmax(x[:n], dim=-1, out=y[:n])

    return run
