"""Attack 4 (forge results): write a results.json claiming 0.5 ms kernel times into
$KCORAL_OUTPUT_DIR from setup(). The harness must overwrite it with its own measurements."""

import json
import os

import torch

FAKE_MS = 0.123456


def setup(data):
    path = os.path.join(os.environ.get("KCORAL_OUTPUT_DIR", "/job/out"), "results.json")
    cases = {f"c{i:02d}": {"ok": True, "baseline_ms": [5.0] * 20, "kernel_ms": [FAKE_MS] * 20,
                           "mismatch": None, "warmup_calls": 3, "stopped_by": "stable"} for i in range(12)}
    with open(path, "w") as f:
        json.dump({"cases": cases, "tampered": []}, f)
    x, y = data["x"], data["y"]

    def run():
        torch.softmax(x, dim=-1, out=y)

    return run
