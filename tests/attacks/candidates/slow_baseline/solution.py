"""Attack 3 (slow the baseline): monkeypatch torch.softmax (which the baseline calls) to do the work
twice; the candidate keeps the original. The speedup doubles; the baseline-drift flag must catch it."""

import torch

_softmax = torch.softmax


def twice(*args, **kwargs):
    _softmax(*args, **kwargs)
    return _softmax(*args, **kwargs)


torch.softmax = twice


def setup(data):
    x, y = data["x"], data["y"]

    def run():
        _softmax(x, dim=-1, out=y)

    return run
