"""Run one candidate through the evaluation N times and report the spread of its speedups, its
verdicts, its flags and its time end to end (wall, the job's phases, the supervisor's), optionally
while the host is loaded (every core busy).

    python bench/eval_spread.py [--task demo/softmax] [--candidate tasks/demo/softmax] [-n 5]
                                [--load N] [--json FILE] [--remote URL]

Starts a server on a temporary data dir (one CPU slot, so evaluations never share the machine)
unless --remote is given. --load N starts N busy loops (``python3 -c 'while True: pass'``, at the
evaluation's own priority; 0 = none, -1 = one per core) for the whole run. Every evaluation that does
not pass under load is run once more with the load stopped: a verdict the quiet re-run does not
reproduce is the host's noise judged as the candidate's fault (the target is none).

The default candidate is the task's own template (the baseline's approach: speedup ~1x).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kcoral.cli.client import KcoralClient  # noqa: E402
from kcoral.cli.tarball import build_tarball  # noqa: E402
from kcoral.protocol.models import EvalSpec  # noqa: E402
from tests.serverproc import ServerProcess  # noqa: E402

#: a timed workload's GPU figures (NVML, tasks.report.gpu_figures)
GPU_FIGURES = ("gpu_clock_mhz", "gpu_clock_min_mhz", "gpu_temp_c", "throttled")


def evaluate(client: KcoralClient, task: str, tar: Path) -> dict[str, Any]:
    began = time.perf_counter()
    job = client.submit(EvalSpec(task=task), tar)
    for _ in client.follow_log(job.id):
        pass
    final = client.status(job.id)
    wall = round(time.perf_counter() - began, 3)
    try:
        report = json.loads(client.read_output(job.id, "report.json"))
    except Exception as exc:  # noqa: BLE001 - a run without a report is recorded as such
        return {"job": job.id, "verdict": str(final.verdict), "reason": final.reason, "error": str(exc)}
    s = report.get("summary") or {}
    timed = [w for w in report.get("workloads", []) if "speedup" in w]
    return {
        "job": job.id,
        "verdict": str(final.verdict),
        "reason": final.reason,
        "passed": f"{report['passed']}/{report['total']}",
        "speedup": s.get("speedup"),
        "ci": [s.get("speedup_lo"), s.get("speedup_hi")],
        "samples": [w.get("samples") for w in timed],
        "stopped_by": [w.get("stopped_by") for w in timed],
        "flags": report.get("flags", []),
        # each timed workload's interval of the request alone, and the slot's A/A calibration folded into "ci"
        "within": [w.get("speedup_within") for w in timed],
        # net (the empty call's time taken off) or raw (the empty call over half a call: every difference
        # reads smaller): read these before comparing two runs' spreads
        "basis": [w.get("basis") for w in timed],
        "protocol_share": [w.get("protocol_share") for w in timed],
        # each side's median ms (the empty call's taken off) and the empty call's: which side the spread
        # between requests comes from
        "sides_ms": [{k: w.get(k) for k in ("baseline_ms", "kernel_ms", "protocol_ms")} for w in timed],
        "calibration": [w.get("calibration") for w in timed],
        "gpu": [{k: w.get(k) for k in GPU_FIGURES} for w in timed],
        "wall_s": wall,
        "job_phases": {k: round(v, 3) for k, v in final.times.phases.items()},
        "phases": report.get("phases", {}),
    }


@contextlib.contextmanager
def session(
    remote: str | None, image: str, task: str, candidate: Path | None, tmp: str
) -> Iterator[tuple[KcoralClient, Path]]:
    """A client of ``remote`` (or of a server started here on a data dir in ``tmp``, one CPU slot, removed
    afterwards) and the submission's tarball (``candidate``, or a copy of the task's template)."""
    server = None if remote else ServerProcess(Path(tmp) / "data", image, 1).start()
    try:
        with KcoralClient(remote or server.url, timeout=120) as client:
            if candidate is None:
                candidate = Path(tmp) / "template"
                candidate.mkdir()
                (candidate / "solution.py").write_text(client.task(task).template)
            yield client, build_tarball(candidate, tmp).path
    finally:
        if server is not None:
            server.stop()
            server.remove_containers()


def busy_loops(count: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True) for _ in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="demo/softmax")
    parser.add_argument("--candidate", type=Path, help="a submission folder [default: a copy of the task's template]")
    parser.add_argument("-n", type=int, default=5)
    parser.add_argument("--load", type=int, default=0)
    parser.add_argument("--image", default="kcoral-job:cpu")
    parser.add_argument("--remote")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    load = (os.cpu_count() or 1) if args.load < 0 else args.load
    runs: list[dict[str, Any]] = []
    reruns: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        loops: list[subprocess.Popen[bytes]] = []
        try:
            with session(args.remote, args.image, args.task, args.candidate, tmp) as (client, tar):
                loops = busy_loops(load)
                for i in range(args.n):
                    runs.append(evaluate(client, args.task, tar))
                    print(f"{i}: {json.dumps(runs[-1])}", flush=True)
                for p in loops:
                    p.kill()
                loops = []
                for run in [r for r in runs if r["verdict"] != "ok"]:
                    again = evaluate(client, args.task, tar)
                    reruns.append({"loaded": run["job"], **again})
                    print(f"quiet re-run of {run['job']}: {json.dumps(again)}", flush=True)
        finally:
            for p in loops:
                p.kill()
    speedups = [r["speedup"] for r in runs if r.get("speedup") is not None]
    summary: dict[str, Any] = {
        "task": args.task,
        "runs": len(runs),
        "busy_loops": load,
        "cores": os.cpu_count(),
        "verdicts": {v: sum(1 for r in runs if r["verdict"] == v) for v in sorted({r["verdict"] for r in runs})},
        "not_reproduced_quietly": sum(1 for r in reruns if r["verdict"] == "ok"),
    }
    if speedups:
        mean = statistics.fmean(speedups)
        summary.update(
            speedup_min=min(speedups),
            speedup_max=max(speedups),
            speedup_median=statistics.median(speedups),
            speedup_range_of_mean=(max(speedups) - min(speedups)) / mean,
        )
    walls = [r["wall_s"] for r in runs if "wall_s" in r]
    if walls:
        summary.update(wall_s_min=min(walls), wall_s_median=statistics.median(walls), wall_s_max=max(walls))
    print(json.dumps(summary, indent=1))
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "runs": runs, "quiet_reruns": reruns}, indent=1) + "\n")


if __name__ == "__main__":
    main()
