"""A/A calibration: the task's own template (the baseline's approach) evaluated as the candidate N times,
and what a trustworthy judge must show for it: intervals that contain 1.0, no false gains, the spread
of the speedups between requests, the intervals' width, and the time per evaluation.

    python bench/calibration.py [--task demo/softmax] [-n 20] [--load N] [--cotenant] [--remote URL]
                                [--candidate DIR] [--calibrate N] [--apart S] [--json FILE]

--load N: N busy loops on this host for the whole run (-1: one per core). --cotenant: a `kcoral
python` job that keeps every core of its own slot busy runs beside each evaluation (a co-tenant in
the other slot). --calibrate N: N A/A requests of `kcoral calibrate TASK` first (under the same load), so
that every evaluation folds the slot's measured floor in. --apart S: S seconds between requests
(back to back by default, as an agent's loop asks). Without --remote a server is started on a
temporary data dir (one CPU slot).

A false gain is an evaluation that passed (exit 0) with its whole interval above 1.0; an A/A
request may also end inconclusive (no score: the host could not give a trustworthy number), which
is counted apart and is never a gain.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.eval_spread import busy_loops, evaluate, session  # noqa: E402
from kcoral.cli.tarball import build_tarball  # noqa: E402
from kcoral.protocol.models import PythonSpec  # noqa: E402
from kcoral.protocol.typeddata import to_data  # noqa: E402

#: the co-tenant: every core of its slot busy for up to this many seconds (cancelled once the run ends)
COTENANT = "import os, multiprocessing as m, time\n" + (
    "def spin():\n    end = time.time() + {s}\n    while time.time() < end: pass\n"
    "ps = [m.Process(target=spin) for _ in os.sched_getaffinity(0)]\n[p.start() for p in ps]; [p.join() for p in ps]\n"
)


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Coverage, false gains, spread and width over the runs (each as bench.eval_spread.evaluate gives)."""
    scored = [r for r in runs if r.get("speedup") is not None and None not in r.get("ci", [None])]
    covered = [r for r in scored if r["ci"][0] <= 1.0 <= r["ci"][1]]
    gains = [r for r in scored if r["verdict"] == "ok" and r["ci"][0] > 1.0]
    # one timed workload: the request's own interval, before the slot's noise floor widened it
    alone = [r["within"][0] for r in scored if len(r.get("within") or []) == 1 and r["within"][0]]
    speedups = [r["speedup"] for r in scored]
    widths = [(r["ci"][1] - r["ci"][0]) / 2 / r["speedup"] for r in scored]
    walls = [r["wall_s"] for r in runs if "wall_s" in r]
    out: dict[str, Any] = {
        "requests": len(runs),
        "verdicts": {v: sum(1 for r in runs if r["verdict"] == v) for v in sorted({r["verdict"] for r in runs})},
        "scored": len(scored),
        "intervals_containing_1": len(covered),
        "false_gains": len(gains),
        "below_1": sum(1 for r in scored if r["ci"][1] < 1.0),
        "calibrated": sum(1 for r in scored if any(r.get("calibration") or [])),
        "alone_containing_1": sum(1 for lo, hi in alone if lo <= 1.0 <= hi),
        "alone_false_gains": sum(1 for lo, _ in alone if lo > 1.0),
        # how each timed workload was scored (net, or raw where the empty call is over half a call)
        "bases": {b: sum(1 for r in scored for x in r.get("basis") or [] if x == b) for b in ("net", "raw")},
    }
    if speedups:
        out.update(
            speedup_min=min(speedups),
            speedup_median=statistics.median(speedups),
            speedup_max=max(speedups),
            spread=_spread(speedups),
            # item 4's measure: the widest spread of any 5 requests in a row (all of them where fewer)
            spread_of_5_in_a_row=max(_spread(speedups[i : i + 5]) for i in range(max(1, len(speedups) - 4))),
            median_half_width=statistics.median(widths),
            # each side on its own (log): the floor below, the floor and others' work on the candidate's
            # core above (tasks.harness.stats.others_slack raises the upper bound alone)
            median_half_width_down=statistics.median(math.log(r["speedup"] / r["ci"][0]) for r in scored),
            median_half_width_up=statistics.median(math.log(r["ci"][1] / r["speedup"]) for r in scored),
        )
    if walls:
        out.update(seconds_per_evaluation=statistics.median(walls))
    out.update(_sides(scored))
    return out


def _spread(speedups: list[float]) -> float:
    return (max(speedups) - min(speedups)) / statistics.fmean(speedups)


def _sides(scored: list[dict[str, Any]]) -> dict[str, float]:
    """Where the spread between requests comes from (requests with one timed workload): the sd of the log
    ratio of the two sides' medians (near the speedup's), and of each side's log median ms (a common
    drift, a clock state, moves both and cancels in the ratio), and the two sides' correlation."""
    pairs = [
        (sides[0]["baseline_ms"], sides[0]["kernel_ms"])
        for r in scored
        if len(sides := r.get("sides_ms") or []) == 1 and (sides[0].get("baseline_ms") or 0) > 0
        if (sides[0].get("kernel_ms") or 0) > 0
    ]
    if len(pairs) < 3:
        return {}
    base = [math.log(b) for b, _ in pairs]
    kern = [math.log(k) for _, k in pairs]
    return {
        "sd_log_medians_ratio": statistics.stdev(b - k for b, k in zip(base, kern, strict=True)),
        "sd_log_baseline_ms": statistics.stdev(base),
        "sd_log_kernel_ms": statistics.stdev(kern),
        "sides_correlation": statistics.correlation(base, kern) if len(set(base)) > 1 and len(set(kern)) > 1 else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="demo/softmax")
    parser.add_argument("--candidate", type=Path, help="a submission folder [default: the task's template]")
    parser.add_argument("-n", type=int, default=20)
    parser.add_argument("--load", type=int, default=0)
    parser.add_argument("--cotenant", action="store_true")
    parser.add_argument("--image", default="kcoral-job:cpu")
    parser.add_argument("--remote")
    parser.add_argument("--calibrate", type=int, default=0, metavar="N")
    parser.add_argument("--apart", type=float, default=0.0, metavar="S", help="seconds between requests")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        loops: list[subprocess.Popen[bytes]] = []
        try:
            with session(args.remote, args.image, args.task, args.candidate, tmp) as (client, tar):
                loops = busy_loops(args.load if args.load >= 0 else len(os.sched_getaffinity(0)))
                if args.calibrate:
                    queued = client.calibrate(args.task, args.calibrate)
                    ended = [client.wait(job, timeout=900).verdict for job in queued.jobs]
                    floors = [to_data(f) for f in client.calibrations(args.task)]
                    print(f"calibrated: {ended}; {json.dumps(floors)}", flush=True)
                for i in range(args.n):
                    if i and args.apart:
                        time.sleep(args.apart)  # spaced as kcoral calibrate --apart spaces a floor's requests
                    tenant = None
                    if args.cotenant:
                        folder = Path(tmp) / "tenant"
                        folder.mkdir(exist_ok=True)
                        (folder / "spin.py").write_text(COTENANT.format(s=600))
                        spec = PythonSpec(argv=["spin.py"], gpus=0, timeout_s=900)
                        tenant = client.submit(spec, build_tarball(folder, tmp).path).id
                        time.sleep(2)  # running before the evaluation starts
                    runs.append(evaluate(client, args.task, tar) | {"cotenant": tenant})
                    if tenant is not None:
                        client.cancel(tenant)
                    print(f"{i}: {json.dumps(runs[-1])}", flush=True)
                    _write(args, runs)  # after each request: a run cut short keeps what it measured
        finally:
            for p in loops:
                p.kill()
    print(json.dumps(_write(args, runs), indent=1))


def _write(args: argparse.Namespace, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The summary of the runs so far, written to ``--json`` with them."""
    summary = {
        "task": args.task,
        "busy_loops": args.load,
        "cotenant": args.cotenant,
        "calibration_requests": args.calibrate,
        **summarise(runs),
    }
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "runs": runs}, indent=1) + "\n")
    return summary


if __name__ == "__main__":
    main()
