"""Attack 3 (tamper, sneaky): keep the checks.compare function object but swap its __code__ for one
that always agrees; then compute only a sixth of the rows from a callable's second call on."""

import torch

from kcoral.tasks.harness import checks


def _agree(name, out, ref, tol):
    return None, {}


checks.compare.__code__ = _agree.__code__


def setup(data):
    x, y = data["x"], data["y"]
    calls = [0]

    def run():
        calls[0] += 1
        n = max(1, x.shape[0] // 6) if calls[0] > 1 else x.shape[0]
        torch.softmax(x[:n], dim=-1, out=y[:n])

    return run
