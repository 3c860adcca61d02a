"""Where a timed call's spread comes from: the task's baseline timed in one process, on the bare GPU
host, with the supervisor's sequence around it and with parts of it changed (issue 12, target 3).

    python3 bench/timing_probe.py [--task kda/forward_b1_t8192_h96] [-n 300] [--json FILE]

Modes, taken round-robin (one call of each per iteration, so a drift hits all alike):
  window      the supervisor's window on the host clock: inputs written, the L2 flushed by writing
              flush_bytes (``add_``), synchronize, the call, synchronize
  read-flush  the same, the L2 flushed by reading flush_bytes (clean lines left behind, no write-back
              of the flush's own lines during the call)
  no-flush    the same without the flush (the inputs' writes still pass through the L2)
  events      the window's sequence, timed by CUDA events around the call alone
  null        the window with no call: the protocol's part of every sample
Per mode: median, p10, p90, p90/p10, the bootstrap 95% half-width of the median and the lag-1
autocorrelation. Run on the GPU host, not in CI.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kcoral.tasks.registry import DEFAULT_TASKS_DIR, find_task  # noqa: E402

MODES = ("window", "read-flush", "no-flush", "events", "null")


def half_width(xs: list[float], resamples: int = 1000) -> float:
    rng = random.Random(0)
    meds = sorted(statistics.median(rng.choices(xs, k=len(xs))) for _ in range(resamples))
    m = statistics.median(xs)
    return (meds[int(0.975 * (resamples - 1))] - meds[int(0.025 * (resamples - 1))]) / 2 / m


def lag1(xs: list[float]) -> float:
    m = statistics.fmean(xs)
    num = sum((a - m) * (b - m) for a, b in zip(xs, xs[1:], strict=False))
    den = sum((a - m) ** 2 for a in xs)
    return num / den if den else 0.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--task", default="kda/forward_b1_t8192_h96")
    ap.add_argument("-n", type=int, default=300)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    task = find_task(DEFAULT_TASKS_DIR, args.task)
    mod = task.module()
    params = next(w["params"] for w in task.manifest["workloads"] if w.get("timed"))
    flush_bytes = task.manifest["timing"]["flush_bytes"]
    draws = [mod.make_inputs(params, seed, "cuda") for seed in range(4)]
    data = {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in draws[0].items()}
    data.update(mod.make_outputs(data, "cuda"))
    fn = mod.baseline(data)
    flush = torch.zeros(flush_bytes // 4, device="cuda")
    sink = torch.zeros(1, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    tensors = [k for k, v in draws[0].items() if isinstance(v, torch.Tensor)]

    def sample(mode: str, draw: dict) -> float:
        torch.cuda.synchronize()
        t0 = time.perf_counter_ns()
        for name in tensors:
            data[name].copy_(draw[name])
        if mode == "read-flush":
            torch.sum(flush, dim=0, keepdim=True, out=sink)
        elif mode != "no-flush":
            flush.add_(1.0)
        torch.cuda.synchronize()
        if mode == "events":
            start.record()
        if mode != "null":
            fn()
        if mode == "events":
            end.record()
        torch.cuda.synchronize()
        elapsed = (time.perf_counter_ns() - t0) / 1e6
        return start.elapsed_time(end) if mode == "events" else elapsed

    for i in range(20):  # warm-up: kernels compiled and loaded, clocks up
        for mode in MODES:
            sample(mode, draws[i % 4])
    times: dict[str, list[float]] = {m: [] for m in MODES}
    for i in range(args.n):
        order = list(MODES) if i % 2 == 0 else list(reversed(MODES))
        for mode in order:
            times[mode].append(sample(mode, draws[i % 4]))
    result = {"task": args.task, "n": args.n, "gpu": torch.cuda.get_device_name(), "modes": {}}
    for mode, xs in times.items():
        s = sorted(xs)
        p10, p90 = s[len(s) // 10], s[9 * len(s) // 10]
        row = {
            "median_ms": round(statistics.median(xs), 4),
            "p10_ms": round(p10, 4),
            "p90_ms": round(p90, 4),
            "p90_over_p10": round(p90 / p10, 4),
            "median_ci_half": round(half_width(xs), 5),
            "lag1": round(lag1(xs), 3),
        }
        result["modes"][mode] = row
        print(mode.ljust(10), json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps({**result, "samples": times}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
