"""Attack 13 (work on a thread): start a thread per call and return at once."""

import threading

import torch


def setup(data):
    x, y = data["x"], data["y"]

    def run():
        threading.Thread(target=torch.softmax, args=(x,), kwargs={"dim": -1, "out": y}).start()

    return run
