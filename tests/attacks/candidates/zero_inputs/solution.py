"""Attack 13 (zero the inputs): compute correctly, then zero x, so a baseline run after this call
sees cheap, constant inputs."""

import torch


def setup(data):
    x, y = data["x"], data["y"]

    def run():
        torch.softmax(x, dim=-1, out=y)
        x.zero_()

    return run
