"""Attack 3 (tamper): rebind tasks.harness.checks.compare (in this process) to always agree, then
compute only a sixth of the rows from a callable's second call on (its timed calls). The checks run
in the supervisor, so the timed outputs must be caught."""

import torch

from kcoral.tasks.harness import checks


def always_ok(name, out, ref, tol):
    return None, {}


checks.compare = always_ok


def setup(data):
    x, y = data["x"], data["y"]
    calls = [0]

    def run():
        calls[0] += 1
        n = max(1, x.shape[0] // 6) if calls[0] > 1 else x.shape[0]
        torch.softmax(x[:n], dim=-1, out=y[:n])

    return run
