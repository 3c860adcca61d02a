"""Attack 3/4/19 (gc.get_objects and frames): search this process's heap and the caller's frames for
any record of timings or verdicts (dicts with kernel_ms / baseline_ms / mismatch / verdict keys) and
rewrite them: kernel times scaled by 0.4, mismatches cleared. Outputs are honest. Prints what it
found as FORGED lines."""

import gc
import sys

import torch

KEYS = {"kernel_ms", "baseline_ms", "mismatch", "verdict", "outcome", "results"}


def forge():
    for obj in gc.get_objects():
        if isinstance(obj, dict) and KEYS & set(k for k in obj if isinstance(k, str)):
            print("FORGED", sorted(k for k in obj if isinstance(k, str))[:8], flush=True)
            for key in ("kernel_ms", "baseline_ms"):
                if isinstance(obj.get(key), list):
                    obj[key] = [t * 0.4 for t in obj[key]]
            obj.pop("mismatch", None)
    frame = sys._getframe(1)
    while frame is not None:
        for name, value in list(frame.f_locals.items()):
            if isinstance(value, (int, float)) and name.endswith(("ms", "_ns", "elapsed")):
                print("FORGED-FRAME", frame.f_code.co_name, name, flush=True)
        frame = frame.f_back


def setup(data):
    x, y = data["x"], data["y"]
    calls = [0]

    def run():
        calls[0] += 1
        torch.softmax(x, dim=-1, out=y)
        if calls[0] in (1, 2, 20):
            forge()

    return run
