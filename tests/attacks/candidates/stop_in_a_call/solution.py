"""A kill at the wrong moment: the worker stops itself (SIGSTOP) inside its 8th call, holding its answer
for ever. It must be given up before the evaluation's time limit and be the candidate's error, with a
report; never the judge's failure. Prints STOPPING."""

import os
import signal

import torch

calls = [0]


def setup(data):
    x, y = data["x"], data["y"]

    def run():
        calls[0] += 1
        torch.softmax(x, dim=-1, out=y)
        if calls[0] == 8:
            print("STOPPING", flush=True)
            os.kill(os.getpid(), signal.SIGSTOP)

    return run
