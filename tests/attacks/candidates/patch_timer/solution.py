"""Attack 4/13 (signal done early): find this worker's channel to the supervisor (gc) and answer
"ok" at the start of every call, before the work; the work follows. The supervisor copies the
outputs as soon as it has the answer, so the early answer must not buy time, only a failure."""

import gc

import torch

from kcoral.tasks.harness.channel import Channel


def channel():
    return next(o for o in gc.get_objects() if isinstance(o, Channel))


def setup(data):
    x, y = data["x"], data["y"]
    chan = channel()

    def run():
        chan.send({"ok": True})
        torch.softmax(x, dim=-1, out=y)

    return run
