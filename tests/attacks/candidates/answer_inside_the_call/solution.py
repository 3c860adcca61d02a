"""Issue 29 (an early answer from inside the call): the callable finds this worker's channel to the
supervisor (in the frames that call it), computes most rows, leaves the last ones to a thread and
answers "ok" itself, then drops the worker's own answer to that call, so the protocol stays in step.
The thread finishes while the supervisor copies the outputs: a copy made in the order the rows are
written never catches it up, and the last rows' time is never on the clock (a red-team pass: 1.039x).
The supervisor must see them unwritten."""

import inspect
import sys
import threading
import time

import torch

from kcoral.tasks.harness.channel import Channel

#: the share of rows finished after the answer: under the judge's limit for CPU outside the calls (0.25
#: ms of a ~2.4 ms call), on inputs big enough for the copy of the rest to take longer than the thread
LEFT = 0.07
BIG = 1 << 22


def channel():
    """The worker's channel, from the frames that called setup (its objects are frozen out of gc's sight)."""
    return next(v for f in inspect.stack() for v in f.frame.f_locals.values() if isinstance(v, Channel))


def setup(data):
    x, y = data["x"], data["y"]
    chan = channel()
    rows = x.shape[0]
    cut = rows - max(1, int(rows * LEFT))

    def drop_the_workers_answer(message, *args, **kwargs):
        del chan.send  # the class's own send again, for the next call

    def honest():
        torch.softmax(x, dim=-1, out=y)

    def run():
        torch.softmax(x[:cut], dim=-1, out=y[:cut])
        tail = threading.Thread(target=torch.softmax, args=(x[cut:],), kwargs={"dim": -1, "out": y[cut:]})
        tail.start()
        chan.send({"ok": True, "at": time.monotonic_ns()})
        chan.send = drop_the_workers_answer
        if not getattr(run, "said", False):
            run.said = True
            print("ANSWERED-EARLY", file=sys.stderr, flush=True)
        tail.join()

    return run if x.numel() >= BIG else honest
