"""Attack 13 (lazy output): compute into a private tensor and never write the output buffer."""

import torch


def setup(data):
    x = data["x"]
    keep = {}

    def run():
        keep["y"] = torch.softmax(x, dim=-1)

    return run
