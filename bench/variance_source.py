"""Where the spread between two A/A requests comes from, on the bare GPU host (issue 29).

    python3 bench/variance_source.py [--task kda/forward_b1_t8192_h96] [--pairs 4] [--instances 6]
                                     [--rounds 40] [--sequential] [--vary all|buffers|scratch] [--json FILE]

kcoral's graph mode times one captured batch per side per request: the baseline's in one process, the
candidate's in another, each batch on buffers allocated once for the request. Two requests of the
template against itself differ by ~0.08% (sd) although each one's own interval is narrower. This
probe asks which draw that is. Each pair starts two fresh worker processes (A and B, the same
baseline call); each worker allocates ``--instances`` instances, each a batch's buffers (``--batch``
input sets, outputs) and a CUDA graph of the batch captured on them with a memory pool of its own. The
parent then asks, round after round, every instance of both workers (alternating which worker goes
first) to replay its graph once after an L2 flush; the worker times the replay to its end.

Printed per pair: each instance's mean ms, the spread of the instance means within each worker (the
allocation's draw) against what the replays' own noise explains, and B over A with one instance
each (what a request sees today) and with all instances pooled. ``--sequential``: each worker holds one
instance at a time and builds the next only after the rounds on the last (its memory given back to the
driver first, a spacer of a random size allocated before it): whether a placement drawn again in the
same process is a new draw, which a measurement could average without holding more memory.
``--vary``: which part of an instance is drawn anew, its buffers (inputs and outputs: the supervisor's,
in kcoral) or its graph's scratch pool (what the call allocates: one pool per worker in kcoral), to
find the part whose placement the spread between requests follows. Run on the GPU host, not in CI.
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


def _worker(conn: Any, task_name: str, seed: int, batch: int, vary: str = "all") -> None:
    """One process: instances of captured batches of the baseline's call, built and replayed on request
    (``("build", count, salt)``: every instance held so far dropped and its memory given back to the
    driver, a spacer of a random size allocated, then ``count`` new ones; an int: that instance's replay,
    timed; None: the end)."""
    import gc
    import random
    import time

    import torch

    from kcoral.tasks.registry import DEFAULT_TASKS_DIR, find_task

    task = find_task(DEFAULT_TASKS_DIR, task_name)
    mod = task.module()
    params = next(w["params"] for w in task.manifest["workloads"] if w.get("timed"))
    flush = torch.empty(task.manifest["timing"]["flush_bytes"], dtype=torch.int8, device="cuda")
    rng = random.Random(seed)
    graphs: list[Any] = []
    kept: list[Any] = []  # every instance's buffers (and the spacer), which its graph reads and writes on replay

    def build(count: int, salt: int) -> None:
        graphs.clear()
        kept.clear()
        gc.collect()
        torch.cuda.synchronize()
        torch.cuda.empty_cache()  # the dropped instances' memory back to the driver: the new ones lie elsewhere
        kept.append(torch.empty(rng.randrange(1024) * 2**21, dtype=torch.int8, device="cuda"))
        sets: list[Any] = []
        for g in range(count):
            if vary != "scratch" or not sets:  # "scratch": every instance on the first one's buffers
                sets = []
                for j in range(batch):
                    data = mod.make_inputs(params, seed * 1000 + (salt + g) * 100 + j, "cuda")
                    data.update(mod.make_outputs(data, "cuda"))
                    sets.append(data)
                kept.extend(sets)
            runs = [mod.baseline(data) for data in sets]
            for run in runs:  # compile, autotune, warm
                run()
            torch.cuda.synchronize()
            graph = torch.cuda.CUDAGraph()
            # "buffers": every graph's scratch in the first one's pool, as kcoral's workers share one
            shared = graphs[0].pool() if vary == "buffers" and graphs else None
            with torch.cuda.graph(graph, pool=shared):
                for run in runs:
                    run()
            for _ in range(3):
                graph.replay()
            torch.cuda.synchronize()
            graphs.append(graph)

    while True:
        message = conn.recv()
        if message is None:
            return
        if isinstance(message, tuple):
            build(message[1], message[2])
            conn.send("ready")
            continue
        flush.add_(1)
        torch.cuda.synchronize()
        t0 = time.perf_counter_ns()
        graphs[message].replay()
        torch.cuda.synchronize()
        conn.send((time.perf_counter_ns() - t0) / 1e6 / batch)


def _pair(
    task: str, seed: int, instances: int, rounds: int, batch: int, sequential: bool, vary: str = "all"
) -> dict[str, Any]:
    """One pair of fresh workers: every replay's ms by worker and instance. ``sequential``: each worker
    holds one instance at a time, rebuilt ``instances`` times (rounds on each before the next), instead
    of all of them at once, replayed in turn."""
    ctx = multiprocessing.get_context("spawn")
    ends = {}
    procs = []
    for k, name in enumerate("AB"):
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_worker, args=(child, task, seed * 2 + k, batch, vary), daemon=True)
        proc.start()
        ends[name] = parent
        procs.append(proc)

    def build(count: int, salt: int) -> None:
        for end in ends.values():
            end.send(("build", count, salt))
        for end in ends.values():
            assert end.recv() == "ready"

    times: dict[str, list[list[float]]] = {name: [[] for _ in range(instances)] for name in "AB"}

    def replay(r: int, g: int, into: int) -> None:
        for name in "AB" if r % 2 == 0 else "BA":
            ends[name].send(g)
            times[name][into].append(ends[name].recv())

    if sequential:
        for g in range(instances):
            build(1, g)
            for r in range(rounds):
                replay(r, 0, g)
    else:
        build(instances, 0)
        for r in range(rounds):
            for g in range(instances):
                replay(r, g, g)
    for end in ends.values():
        end.send(None)
    for proc in procs:
        proc.join()
    return times


def _summary(times: dict[str, list[list[float]]]) -> dict[str, Any]:
    """The figures one pair prints (see the module's docstring)."""
    out: dict[str, Any] = {}
    for name, per in times.items():
        means = [statistics.mean(t) for t in per]
        ses = [statistics.stdev(t) / math.sqrt(len(t)) for t in per]
        grand = statistics.mean(means)
        out[name] = {
            "means_ms": [round(m, 5) for m in means],
            "between_instances_sd_pct": 100 * statistics.stdev(means) / grand if len(means) > 1 else 0.0,
            "replay_noise_se_pct": 100 * statistics.mean(ses) / grand,
            "mean_ms": grand,
        }
    a, b = out["A"]["means_ms"], out["B"]["means_ms"]
    out["ratio_one_instance"] = [round(bb / aa, 5) for aa, bb in zip(a, b, strict=True)]
    out["ratio_pooled"] = out["B"]["mean_ms"] / out["A"]["mean_ms"]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="kda/forward_b1_t8192_h96")
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--instances", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--sequential", action="store_true", help="one instance at a time, rebuilt elsewhere")
    ap.add_argument(
        "--vary",
        choices=("all", "buffers", "scratch"),
        default="all",
        help="what an instance draws anew: its buffers and its graph's scratch pool (all); its buffers, "
        "every graph's scratch in one pool as kcoral's workers keep it (buffers); its graph's scratch pool, "
        "on the first instance's buffers (scratch)",
    )
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if min(args.pairs, args.instances, args.batch) < 1 or args.rounds < 2:
        ap.error("--pairs, --instances and --batch must be at least 1, --rounds at least 2 (a replay's noise)")
    pairs = []
    for p in range(args.pairs):
        s = _summary(_pair(args.task, 7919 + p, args.instances, args.rounds, args.batch, args.sequential, args.vary))
        pairs.append(s)
        print(f"pair {p + 1}: B/A pooled {s['ratio_pooled']:.5f}; one instance each: {s['ratio_one_instance']}")
        for name in "AB":
            w = s[name]
            print(
                f"  {name}: instance means {w['means_ms']}; between instances sd {w['between_instances_sd_pct']:.3f}%"
                f" (replay noise alone: se {w['replay_noise_se_pct']:.3f}%)"
            )
        sys.stdout.flush()
    ones = [r for s in pairs for r in s["ratio_one_instance"]]
    pooled = [s["ratio_pooled"] for s in pairs]
    if len(ones) > 1:
        print(f"one instance per side: {len(ones)} ratios, sd {100 * statistics.stdev(ones):.3f}%")
    if len(pooled) > 1:
        print(f"pooled over {args.instances} instances: {len(pooled)} ratios, sd {100 * statistics.stdev(pooled):.3f}%")
    if args.json:
        args.json.write_text(json.dumps({"args": vars(args) | {"json": str(args.json)}, "pairs": pairs}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
