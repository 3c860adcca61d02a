"""Attack 4/13 (forged claim below the physical floor): an atexit handler rewrites results.json
with kernel times of 0.01 ms. The floor (0.4 ms) and speedup-limit flags must catch it."""

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
            res["kernel_ms"] = [0.01] * len(res["kernel_ms"])
    doc["tampered"] = []
    with open(path, "w") as f:
        json.dump(doc, f)


atexit.register(forge)


def setup(data):
    x, y = data["x"], data["y"]

    def run():
        torch.softmax(x, dim=-1, out=y)

    return run
