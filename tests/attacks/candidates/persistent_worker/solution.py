"""Attack 13 (work on a thread, sneaky): one worker thread started at import (so the thread count
never changes during a call). Each call computes half the rows and hands the other half to the
worker, then returns (the worker waits 50 ms first, so the deferred half is surely still owed when
the supervisor copies the outputs: a race the attack may win on a tiny case would make this test
flaky). torch.Tensor.detach is patched to wait for the worker first, so any output the candidate's
own process looks at is complete."""

import queue
import threading
import time

import torch

_jobs = queue.Queue()
_pending = [None]


def _worker():
    while True:
        job, done = _jobs.get()
        time.sleep(0.05)
        job()
        done.set()


threading.Thread(target=_worker, daemon=True).start()
_detach = torch.Tensor.detach


def _waiting_detach(self, *args, **kwargs):
    if _pending[0] is not None:
        _pending[0].wait()
    return _detach(self, *args, **kwargs)


torch.Tensor.detach = _waiting_detach


def setup(data):
    x, y = data["x"], data["y"]
    half = x.shape[0] // 2

    def run():
        if _pending[0] is not None:
            _pending[0].wait()
        torch.softmax(x[:half], dim=-1, out=y[:half])
        done = threading.Event()
        _pending[0] = done
        _jobs.put((lambda: torch.softmax(x[half:], dim=-1, out=y[half:]), done))

    return run
