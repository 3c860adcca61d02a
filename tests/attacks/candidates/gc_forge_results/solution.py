"""Attack 3/4 (gc.get_objects): find the harness's `results` dict in the heap and, from the calls of
the later (untimed) cases, scale the timed case's recorded kernel times by 0.4. Outputs are honest,
no function is replaced: only the claims the harness writes to results.json lie."""

import gc
import sys

import torch

_done = set()


def forge():
    for obj in gc.get_objects():
        if isinstance(obj, dict) and set(obj) == {"cases", "tampered"} and isinstance(obj["cases"], dict):
            for cid, res in obj["cases"].items():
                if isinstance(res, dict) and res.get("kernel_ms") and cid not in _done:
                    res["kernel_ms"] = [t * 0.4 for t in res["kernel_ms"]]
                    _done.add(cid)


def setup(data):
    x, y = data["x"], data["y"]

    def run():
        torch.softmax(x, dim=-1, out=y)
        if not _done and not sys._getframe(1).f_code.co_filename.endswith("timing.py"):
            forge()  # only in untimed calls: the heap scan itself is slow

    return run
