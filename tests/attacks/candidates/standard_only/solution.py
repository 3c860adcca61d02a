"""Attack 14 (phase detection): correct only when the inputs look like the standard workload
(|x| < 10); otherwise a cheap, wrong answer (a uniform row)."""

import torch


def setup(data):
    x, y = data["x"], data["y"]

    def run():
        if float(x.abs().max()) < 10:
            torch.softmax(x, dim=-1, out=y)
        else:
            y.fill_(1.0 / x.shape[-1])

    return run
