"""Issue 8, class 3 (partial work): the full softmax on a callable's first call (the untimed check),
then only the first quarter of the rows on every later call (the timed ones). There is no mismatch
record in this process to erase: the supervisor compares every timed call's outputs."""

import torch


def setup(data):
    x, y = data["x"], data["y"]
    calls = [0]

    def run():
        calls[0] += 1
        n = x.shape[0] if calls[0] == 1 else max(1, x.shape[0] // 4)
        torch.softmax(x[:n], dim=-1, out=y[:n])

    return run
