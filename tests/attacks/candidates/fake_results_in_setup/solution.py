"""Attack 4 (forge results): write a results.json claiming 0.5 ms kernel times into
$KCORAL_OUTPUT_DIR from setup(). The candidate's container has no output folder the server reads
(the write is refused); the score must be the honest one."""

import json
import os

import torch

FAKE_MS = 0.123456


def setup(data):
    path = os.path.join(os.environ.get("KCORAL_OUTPUT_DIR", "/job/out"), "results.json")
    cases = {
        f"c{i:02d}": {
            "ok": True,
            "baseline_ms": [5.0] * 20,
            "kernel_ms": [FAKE_MS] * 20,
            "mismatch": None,
            "warmup_calls": 3,
            "stopped_by": "stable",
        }
        for i in range(12)
    }
    try:
        with open(path, "w") as f:
            json.dump({"cases": cases, "tampered": []}, f)
        print(f"FORGE-WROTE {path}", flush=True)
    except OSError as exc:
        print(f"FORGE-REFUSED {path}: {exc.strerror}", flush=True)
    x, y = data["x"], data["y"]

    def run():
        torch.softmax(x, dim=-1, out=y)

    return run
