"""How long the supervisor's quiet-GPU probe (one tiny kernel + synchronize) takes on an idle GPU
and while another process keeps the GPU busy without using the CPU (blocking sync, queued matmuls).
Run on a GPU host: python3 bench/gpu_quiet_probe.py   (prints the probe latency percentiles)."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

import torch

HOG = """
import torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
ev = torch.cuda.Event(blocking=True)
print("hog ready", flush=True)
while True:
    for _ in range(200):
        a = (a @ a).clamp_(-1, 1)
    ev.record()
    ev.synchronize()   # a blocking event: the CPU sleeps while the GPU works
"""


def probes(n: int = 300) -> list[float]:
    x = torch.zeros(1, device="cuda")
    out = []
    for _ in range(n):
        t = time.perf_counter_ns()
        x.add_(1.0)
        torch.cuda.synchronize()
        out.append((time.perf_counter_ns() - t) / 1e3)
        time.sleep(0.002)
    return out


def show(name: str, xs: list[float]) -> None:
    q = statistics.quantiles(xs, n=100)
    print(
        f"{name}: probe us p10 {q[9]:.1f} p50 {q[49]:.1f} p90 {q[89]:.1f} p99 {q[98]:.1f} max {max(xs):.1f}", flush=True
    )


if __name__ == "__main__":
    torch.zeros(1, device="cuda")
    show("idle", probes())
    hog = subprocess.Popen([sys.executable, "-c", HOG], stdout=subprocess.PIPE, text=True)
    assert hog.stdout is not None and "ready" in hog.stdout.readline()
    time.sleep(1.0)
    show("hog", probes())
    with open(f"/proc/{hog.pid}/stat") as f:
        fields = f.read().split()
    print(f"hog CPU time so far: {(int(fields[13]) + int(fields[14])) / 100:.2f} s", flush=True)
    hog.kill()
    show("after", probes())
