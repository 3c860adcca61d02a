"""Attack 4 (forge results): an atexit handler rewrites $KCORAL_OUTPUT_DIR/results.json after the
harness wrote it, scaling the kernel times by 0.4 (plausible: above the floor, under the speedup
limit) and clearing the tampering list. Outputs are honest."""

import atexit
import json
import os

import torch


def forge():
    path = os.path.join(os.environ.get("KCORAL_OUTPUT_DIR", "/job/out"), "results.json")
    with open(path) as f:
        doc = json.load(f)
    for res in doc["cases"].values():
        if res.get("kernel_ms"):
            res["kernel_ms"] = [t * 0.4 for t in res["kernel_ms"]]
    doc["tampered"] = []
    with open(path, "w") as f:
        json.dump(doc, f)


atexit.register(forge)


def setup(data):
    x, y = data["x"], data["y"]

    def run():
        torch.softmax(x, dim=-1, out=y)

    return run
