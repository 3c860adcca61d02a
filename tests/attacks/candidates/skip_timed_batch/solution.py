"""Issue 8, class 1 (return at once where calls come back to back): correct on each callable's first
call, then return at once on every call that follows within 1 s of the previous one (the shape of
a timing loop; 1 s and not less, so that a slow machine's longer gaps between calls cannot turn the
attack into an honest run), while looking through the heap and the caller's frames for timing
records to edit. Every timed call's outputs are checked by the supervisor, so this must fail."""

import gc
import sys
import time

import torch


def setup(data):
    x, y = data["x"], data["y"]
    last = [0.0]

    def run():
        now = time.monotonic()
        quick = now - last[0] < 1.0
        last[0] = now
        if quick:
            for obj in gc.get_objects():
                if isinstance(obj, dict) and "kernel_ms" in obj:
                    obj["kernel_ms"] = [0.001]
            sys._getframe(1).f_locals.clear()
            return
        torch.softmax(x, dim=-1, out=y)

    return run
