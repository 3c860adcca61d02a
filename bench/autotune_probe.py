"""Where a cold first call of a Triton task goes: compiling or benchmarking autotune configs, and
what two remedies would leave (issue 12: KDA pinned cold 101 s against a 90 s target).

    python3 bench/autotune_probe.py [--task kda/forward_b1_t8192_h96] [--threads 16] [--json FILE]

Three fresh processes, each with an empty TRITON_CACHE_DIR of its own, each timing the first call of
the task's reference on the standard workload (what the judge's warm-up makes):

- ``plain``: as the judge does today; the seconds in ``compile()`` and in the autotuner's benchmarks
  are summed apart;
- ``ahead``: the call inside the supervisor's ``tasks.harness.autotune.compile_ahead`` (each
  autotuned kernel's configs compiled on a thread pool, through Triton's AsyncCompileMode, before
  the autotuner benchmarks them), as the judge's warm-up makes it;
- ``chosen``: the cache seeded with only the ``*.autotune.json`` choices ``plain`` wrote, so the call
  compiles the chosen config of each kernel and benchmarks nothing.

Run on the GPU host, not in CI.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: one round's limit: a cold first call took 112 s on the H200
ROUND_TIMEOUT_S = 300

CHILD = r"""
import contextlib, json, os, sys, threading, time
t0 = time.perf_counter()
import torch, triton
import triton.compiler as tcomp
from triton.runtime import autotuner as at
sys.path.insert(0, sys.argv[1])
from kcoral.tasks.registry import DEFAULT_TASKS_DIR, find_task
mode, threads = sys.argv[3], int(sys.argv[4])
stats = {"compiles": 0, "compile_s": 0.0, "benches": 0, "bench_s": 0.0, "compile_in_bench_s": 0.0}
local, lock = threading.local(), threading.Lock()
real_compile = tcomp.compile
def timed_compile(*a, **k):
    began = time.perf_counter()
    try:
        return real_compile(*a, **k)
    finally:
        took = time.perf_counter() - began
        with lock:
            stats["compiles"] += 1
            stats["compile_s"] += took
            if getattr(local, "bench", False):
                stats["compile_in_bench_s"] += took
tcomp.compile = timed_compile
import triton.compiler.compiler as tcc
tcc.compile = timed_compile
real_bench = at.Autotuner._bench
def timed_bench(self, *a, **k):
    local.bench, began = True, time.perf_counter()
    try:
        return real_bench(self, *a, **k)
    finally:
        local.bench = False
        stats["benches"] += 1
        stats["bench_s"] += time.perf_counter() - began
at.Autotuner._bench = timed_bench
task = find_task(DEFAULT_TASKS_DIR, sys.argv[2])
mod = task.module()
torch.zeros(1, device="cuda")
t1 = time.perf_counter()
params = next(w["params"] for w in task.manifest["workloads"] if w.get("timed"))
inputs = mod.make_inputs(params, 1, "cuda")
torch.cuda.synchronize()
t2 = time.perf_counter()
ahead = contextlib.nullcontext()
if mode == "ahead":
    from kcoral.tasks.harness.autotune import compile_ahead
    ahead = compile_ahead(threads)
with ahead:
    mod.reference(inputs, params)
    torch.cuda.synchronize()
t3 = time.perf_counter()
mod.reference(inputs, params)
torch.cuda.synchronize()
t4 = time.perf_counter()
out = {"imports_s": t1 - t0, "inputs_s": t2 - t1, "first_call_s": t3 - t2, "second_call_s": t4 - t3}
out |= {k: (round(v, 3) if isinstance(v, float) else v) for k, v in stats.items()}
print(json.dumps(out))
"""


def run_round(task: str, mode: str, cache: str, threads: int) -> dict[str, object]:
    env = {**os.environ, "TRITON_CACHE_DIR": cache, "TRITON_CACHE_AUTOTUNING": "1"}
    began = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, str(ROOT), task, mode, str(threads)],
            env=env, capture_output=True, text=True, timeout=ROUND_TIMEOUT_S,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"mode": mode, "rc": "timeout", "wall_s": round(time.perf_counter() - began, 2)}
    row: dict[str, object] = {"mode": mode, "rc": proc.returncode, "wall_s": round(time.perf_counter() - began, 2)}
    lines = proc.stdout.strip().splitlines()
    if proc.returncode == 0 and lines:
        row |= {k: (round(v, 3) if isinstance(v, float) else v) for k, v in json.loads(lines[-1]).items()}
    else:
        row["stderr"] = proc.stderr[-3000:]
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--task", default="kda/forward_b1_t8192_h96")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 4)
    ap.add_argument("--modes", default="plain,ahead,chosen")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rows, caches = [], {}
    try:
        for mode in args.modes.split(","):
            caches[mode] = tempfile.mkdtemp(prefix=f"triton-{mode}-")
            if mode == "chosen":
                seeded = 0
                for path in Path(caches["plain"]).rglob("*.autotune.json"):
                    target = Path(caches[mode]) / path.relative_to(caches["plain"])
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(path, target)
                    seeded += 1
            row = run_round(args.task, mode, caches[mode], args.threads)
            if mode == "chosen":
                row["seeded_choices"] = seeded
            row["cache_files"] = sum(len(f) for _, _, f in os.walk(caches[mode]))
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        for cache in caches.values():
            shutil.rmtree(cache, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
