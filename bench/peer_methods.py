"""The timing methods other benchmarks use, each timing a task's baseline against its own template (an
A/A pair: the same kernel twice), on the bare GPU host, for issue 29's comparison with kcoral's A/A.

    python3 bench/peer_methods.py [--task kda/forward_b1_t8192_h96] [--pairs 10] [--json FILE]

Each pair runs in a fresh process (new inputs, new allocations, a new CUDA context: what differs between
two requests to a service) and times the baseline (A) and the template (B) with each method, A and B
alternating, then reports B's time over A's as the pair's speedup. The methods, written here from their
public descriptions (no code taken):

  events-mean     a CUDA event pair around each call, 100 calls after 3 warm-up calls, the mean
                  (the way KernelBench's harness times a problem)
  flush-events    the L2 cleared before each call, a CUDA event pair around it, calls until the mean's
                  standard error is under 0.1% of it (at least 3, at most 100 calls, 10 s), the mean
                  (the way GPU MODE's evaluator times a submission)
  do-bench        ``triton.testing.do_bench`` with its defaults, the median (queue full of calls: host
                  launch gaps hidden)

Printed per method: every pair's speedup, the spread (largest over smallest, less 1), the standard
deviation and the median ms of each side. Run on the GPU host, not in CI.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

METHODS = ("events-mean", "flush-events", "do-bench")


def _pair(task_name: str, seed: int) -> dict[str, dict[str, float]]:
    """One pair in this (fresh) process: each method's ms for the baseline (A) and the template (B)."""
    import importlib.util
    import time

    import torch
    import triton.testing

    from kcoral.tasks.registry import DEFAULT_TASKS_DIR, find_task

    task = find_task(DEFAULT_TASKS_DIR, task_name)
    mod = task.module()
    params = next(w["params"] for w in task.manifest["workloads"] if w.get("timed"))
    flush_bytes = task.manifest["timing"]["flush_bytes"]
    spec = importlib.util.spec_from_file_location("template", task.root / "template.py")
    assert spec is not None and spec.loader is not None
    template = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(template)

    def prepared() -> dict[str, Any]:
        data = mod.make_inputs(params, seed, "cuda")
        data.update(mod.make_outputs(data, "cuda"))
        return data

    data_a, data_b = prepared(), prepared()
    sides = {"A": mod.baseline(data_a), "B": template.setup(data_b, *(params[k] for k in ("B", "T", "H")))}
    cache = torch.empty(flush_bytes, dtype=torch.int8, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def timed(fn: Any, flush: bool) -> float:
        if flush:
            cache.zero_()
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end)

    def events_mean(fn: Any) -> float:
        for _ in range(3):
            timed(fn, False)
        return statistics.fmean(timed(fn, False) for _ in range(100))

    def flush_events(fn: Any) -> float:
        times: list[float] = []
        began = time.monotonic()
        while len(times) < 100 and time.monotonic() - began < 10:
            times.append(timed(fn, True))
            if len(times) >= 3:
                mean = statistics.fmean(times)
                if statistics.stdev(times) / math.sqrt(len(times)) < 0.001 * mean:
                    break
        return statistics.fmean(times)

    def do_bench(fn: Any) -> float:
        return float(triton.testing.do_bench(fn, return_mode="median"))

    runs = {"events-mean": events_mean, "flush-events": flush_events, "do-bench": do_bench}
    for fn in sides.values():  # compiled, loaded, clocks up
        for _ in range(5):
            fn()
    torch.cuda.synchronize()
    out: dict[str, dict[str, float]] = {}
    for method, run in runs.items():
        order = ("A", "B") if seed % 2 == 0 else ("B", "A")
        out[method] = {side: run(sides[side]) for side in order}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--task", default="kda/forward_b1_t8192_h96")
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    ctx = multiprocessing.get_context("spawn")
    pairs = []
    for seed in range(args.pairs):
        with ctx.Pool(1) as pool:
            pairs.append(pool.apply(_pair, (args.task, 1000 + seed)))
        print(f"pair {seed + 1}:", json.dumps(pairs[-1]), flush=True)
    result: dict[str, Any] = {"task": args.task, "pairs": args.pairs, "methods": {}}
    for method in METHODS:
        speedups = [p[method]["A"] / p[method]["B"] for p in pairs]
        row = {
            "speedups": [round(s, 5) for s in speedups],
            "spread": round(max(speedups) / min(speedups) - 1, 5),
            "sd": round(statistics.stdev(speedups), 5) if len(speedups) > 1 else None,
            "contain_1_within_0.2%": sum(1 for s in speedups if abs(s - 1) <= 0.002),
            "a_ms_median": round(statistics.median(p[method]["A"] for p in pairs), 4),
            "b_ms_median": round(statistics.median(p[method]["B"] for p in pairs), 4),
        }
        result["methods"][method] = row
        print(method.ljust(13), json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps({**result, "raw": pairs}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
