"""Run one candidate through ``kcoral eval`` N times and report the spread of its speedups.

    python bench/eval_spread.py [--task demo/softmax] [--candidate tests/eval_candidates/softmax_good] [-n 5]
                                [--remote URL]

Starts a server on a temporary data dir (one CPU slot, so evaluations never share the machine)
unless --remote is given.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.overhead import start_server  # noqa: E402
from kcoral.cli.client import KcoralClient  # noqa: E402
from kcoral.cli.tarball import build_tarball  # noqa: E402
from kcoral.runner.models import EvalSpec  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="demo/softmax")
    parser.add_argument("--candidate", type=Path, default=ROOT / "tests/eval_candidates/softmax_good")
    parser.add_argument("-n", type=int, default=5)
    parser.add_argument("--image", default="kcoral-job:cpu")
    parser.add_argument("--remote")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = (None, args.remote) if args.remote else start_server(args.image, 1, Path(tmp) / "data")
        speedups = []
        try:
            with KcoralClient(url, timeout=120) as client:
                tar = build_tarball(args.candidate, tmp)
                for i in range(args.n):
                    job = client.submit(EvalSpec(task=args.task, timeout_s=1500), tar.path)
                    for _ in client.follow_log(job.id):
                        pass
                    final = client.status(job.id)
                    report = json.loads(client.read_output(job.id, "report.json"))
                    s, row = report.get("summary", {}), report["workloads"][0] if report.get("workloads") else {}
                    print(
                        f"{i}: {final.verdict} passed {report['passed']}/{report['total']} "
                        f"speedup {s.get('speedup', float('nan')):.4f} [{s.get('speedup_lo', 0):.4f}, "
                        f"{s.get('speedup_hi', 0):.4f}] n={row.get('samples')} flags={report['flags']}",
                        flush=True,
                    )
                    if "speedup" in s:
                        speedups.append(s["speedup"])
        finally:
            if proc is not None:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(20)
    if speedups:
        mean = statistics.fmean(speedups)
        print(
            f"speedups min {min(speedups):.4f} max {max(speedups):.4f} mean {mean:.4f} "
            f"range {(max(speedups) - min(speedups)) / mean:.1%} of the mean, n={len(speedups)}"
        )


if __name__ == "__main__":
    main()
