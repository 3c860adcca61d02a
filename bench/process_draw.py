"""How much the same GPU call's time moves from one fresh process to the next (no kcoral in the way).

The judge times each side in a process of its own, fresh per request; identical code then scores
0.87-1.10x on a few pack problems (GEMM, a convolution, a scan) while most stay within +-3%. This runs
N fresh processes one after another on the GPU host, each timing the same calls (inputs from one seed,
batches of 8 between CUDA events, the median of the batches), and records per process: the median ms
per call, the kernels the call launched (torch.profiler), and where its buffers landed. If the spread
between processes is as wide as the judge's, and the kernels or the addresses tell the slow processes
apart, the draw is the process's, not the judge's.

Usage: python3 bench/process_draw.py [-n 12] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys

CHILD = r"""
import json, statistics, sys, torch
import torch.nn.functional as F
torch.manual_seed(0)
dev = "cuda"
g = torch.Generator(device=dev).manual_seed(6256)
s = 4096 ** -0.25
a0 = (torch.randn(4096, 4096, device=dev, generator=g) * s).half()
b0 = (torch.randn(4096, 4096, device=dev, generator=g) * s).half()
a1 = (torch.randn(8192, 1024, device=dev, generator=g) * s).half()
b1 = (torch.randn(1024, 2048, device=dev, generator=g) * s).half()
x = torch.rand(1024, 32768, device=dev)
img = torch.randn(16, 32, 128, 128, device=dev)
conv = torch.nn.Conv2d(32, 64, 3, padding=1).to(dev)
calls = {
    "matmul 4096^3 fp16": lambda: a0 @ b0,
    "matmul 8192x1024x2048 fp16": lambda: a1 @ b1,
    "cumsum 1024x32768": lambda: torch.cumsum(x, dim=1),
    "conv2d 3x3 16x32x128x128": lambda: conv(img),
}
out = {"ptrs": {k: v.data_ptr() % (2 << 20) for k, v in
                {"a0": a0, "b0": b0, "a1": a1, "b1": b1, "x": x, "img": img}.items()}, "calls": {}}
with torch.no_grad():
    for name, fn in calls.items():
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
        ms = []
        for _ in range(60):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            for _ in range(8):
                fn()
            e1.record()
            e1.synchronize()
            ms.append(e0.elapsed_time(e1) / 8)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
        kernels = sorted({e.name[:90] for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA})
        r = fn()
        out["calls"][name] = {"median_ms": statistics.median(ms), "first_ms": statistics.median(ms[:20]),
                              "last_ms": statistics.median(ms[-20:]), "kernels": kernels,
                              "out_ptr": r.data_ptr() % (2 << 20)}
print(json.dumps(out))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=12, help="fresh processes, one after another")
    parser.add_argument("--json", help="write every process's record here")
    args = parser.parse_args()
    runs = []
    for i in range(args.n):
        p = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            print(f"process {i}: exit {p.returncode}: {p.stderr[-800:]}", file=sys.stderr)
            return 1
        runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
        line = ", ".join(f"{k} {v['median_ms']:.4f}" for k, v in runs[-1]["calls"].items())
        print(f"process {i}: {line}", flush=True)
    for name in runs[0]["calls"]:
        ms = [r["calls"][name]["median_ms"] for r in runs]
        logs = [math.log(m) for m in ms]
        kernels = {tuple(r["calls"][name]["kernels"]) for r in runs}
        print(
            f"{name}: median {statistics.median(ms):.4f} ms, range {min(ms):.4f}-{max(ms):.4f} "
            f"(max/min {max(ms) / min(ms):.3f}), sd between processes {100 * statistics.stdev(logs):.2f}%, "
            f"{len(kernels)} kernel set(s)"
        )
        for k in kernels:
            who = [i for i, r in enumerate(runs) if tuple(r["calls"][name]["kernels"]) == k]
            print(f"   processes {who}: {list(k)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(runs, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
