"""Attack 13 (lazy output): write the result into a new tensor and rebind data['y'] to it."""

import torch


def setup(data):
    x = data["x"]

    def run():
        data["y"] = torch.softmax(x, dim=-1)

    return run
