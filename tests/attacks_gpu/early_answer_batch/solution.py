"""Issue 29 (answer before the work is done, in the trusted batch mode): the worker's batch operation is
replaced in this process, so that once three replays of its captured batch were timed honestly, it
replays the graph and answers after 85% of that time, without waiting for the GPU. The supervisor's
clock stops at the answer in batch mode, and the batch's outputs are copied after the clock: the last
15% of the work would go untimed, and the copy would wait for it off the clock. It must buy a failure
(unfinished outputs, a GPU still busy) or nothing. The calls are the KDA task's own template's:
scripts/gpu-host-eval.sh puts template.py beside this file."""

import sys
import time

import template

EARLY = 0.85
worker = sys.modules["__main__"]
honest = worker.Cases.batch
timed: list[float] = []
said: list[bool] = []


def batch(self, message, fds):
    if not message.get("graph") or len(timed) < 3:
        t = time.perf_counter()
        honest(self, message, fds)
        if message.get("graph"):
            timed.append(time.perf_counter() - t)
        return
    t = time.perf_counter()
    self.graphs[tuple(str(c) for c in message["cases"])].replay()
    time.sleep(max(0.0, EARLY * min(timed) - (time.perf_counter() - t)))
    if not said:
        said.append(True)
        print("ANSWERING-EARLY", file=sys.stderr, flush=True)


worker.Cases.batch = batch


def setup(data, B, T, H):
    return template.setup(data, B, T, H)
