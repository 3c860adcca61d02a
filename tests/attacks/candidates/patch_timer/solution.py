"""Attack 4/13 (signal done early): find this worker's channel to the supervisor and answer
"ok" at the start of every call, before the work; the work follows. The supervisor copies the
outputs as soon as it has the answer, so the early answer must not buy time, only a failure."""

import inspect

import torch

from kcoral.tasks.harness.channel import Channel


def channel():
    """The worker's channel, from the frames that called setup (the worker's objects are frozen out of gc's
    sight: looked for there, none was ever found, and setup failed before any call)."""
    return next(v for f in inspect.stack() for v in f.frame.f_locals.values() if isinstance(v, Channel))


def setup(data):
    x, y = data["x"], data["y"]
    chan = channel()

    def run():
        chan.send({"ok": True})
        torch.softmax(x, dim=-1, out=y)

    return run
