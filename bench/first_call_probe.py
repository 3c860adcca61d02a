"""Where a Triton task's first call goes, process by process (issue 12: an evaluation's holdout spent
9-10 s in the reference's first FLA call with a warm kernel cache).

    python3 bench/first_call_probe.py [--task kda/forward_b1_t8192_h96] [--rounds 3] [--cache DIR]

Each round is a fresh process with the same TRITON_CACHE_DIR (round 1 starts from an empty one):
it imports the task, makes the standard workload's inputs on the GPU, and times the first call of
the task's reference, then a second call, printing the seconds of each and (with --profile) the
functions the first call spent its time in. Run on the GPU host, not in CI.
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

CHILD = r"""
import cProfile, io, json, os, pstats, sys, time
t0 = time.perf_counter()
import torch
sys.path.insert(0, sys.argv[1])
from kcoral.tasks.registry import DEFAULT_TASKS_DIR, find_task
task = find_task(DEFAULT_TASKS_DIR, sys.argv[2])
mod = task.module()
torch.zeros(1, device="cuda")
t1 = time.perf_counter()
params = next(w["params"] for w in task.manifest["workloads"] if w.get("timed"))
inputs = mod.make_inputs(params, 1, "cuda")
torch.cuda.synchronize()
t2 = time.perf_counter()
prof = cProfile.Profile() if sys.argv[3] == "1" else None
if prof: prof.enable()
mod.reference(inputs, params)
torch.cuda.synchronize()
if prof: prof.disable()
t3 = time.perf_counter()
mod.reference(inputs, params)
torch.cuda.synchronize()
t4 = time.perf_counter()
top = ""
if prof:
    s = io.StringIO(); pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(30); top = s.getvalue()
    s = io.StringIO(); pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(15); top += s.getvalue()
print(json.dumps({"imports_s": t1 - t0, "inputs_s": t2 - t1, "first_call_s": t3 - t2, "second_call_s": t4 - t3}))
print(top, file=sys.stderr)
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--task", default="kda/forward_b1_t8192_h96")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cache", help="TRITON_CACHE_DIR to use (default: a fresh temporary one)")
    ap.add_argument("--profile", action="store_true", help="cProfile the first call of every round after the first")
    ap.add_argument("--no-autotune-cache", action="store_true", help="leave TRITON_CACHE_AUTOTUNING unset")
    args = ap.parse_args()
    cache = args.cache or tempfile.mkdtemp(prefix="triton-probe-")
    env = {**os.environ, "TRITON_CACHE_DIR": cache, "TRITON_PRINT_AUTOTUNING": "1"}
    if not args.no_autotune_cache:
        env["TRITON_CACHE_AUTOTUNING"] = "1"
    rows = []
    for n in range(1, args.rounds + 1):
        profile = "1" if args.profile and n > 1 else "0"
        began = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, str(ROOT), args.task, profile], env=env, capture_output=True, text=True
        )
        wall = time.perf_counter() - began
        out = proc.stdout.strip().splitlines()
        autotuned = sum("autotuning" in line.lower() for line in proc.stdout.splitlines() + proc.stderr.splitlines())
        row = {"round": n, "rc": proc.returncode, "wall_s": round(wall, 2), "autotune_lines": autotuned}
        if proc.returncode == 0 and out:
            row |= {k: round(v, 3) for k, v in json.loads(out[-1]).items()}
        rows.append(row)
        print(json.dumps(row), flush=True)
        if profile == "1" or proc.returncode:
            print(proc.stderr[-6000:], flush=True)
    files = sum(len(f) for _, _, f in os.walk(cache))
    print(json.dumps({"cache": cache, "files": files}))
    if not args.cache:
        shutil.rmtree(cache, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
