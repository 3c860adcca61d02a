"""What the raw samples of evaluations say: per receipt, the speedup and its interval as the report
computes them, the per-iteration ratios' spread, and the ratios of the iterations that timed the
baseline first against those that timed the candidate first (an order effect shows as a gap).

    python bench/receipt_samples.py RECEIPT.json... [--workload standard]

Pure: reads receipts (``kcoral eval`` writes receipt.json beside report.json), needs no server.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kcoral.tasks.harness.stats import estimate, net_samples  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("receipts", nargs="+", type=Path)
    ap.add_argument("--workload", default="standard")
    args = ap.parse_args()
    for path in args.receipts:
        t = json.loads(path.read_text()).get("timings", {}).get(args.workload)
        if not t:
            continue
        base = net_samples(t["baseline_ms"], t["protocol_ms"])
        cand = net_samples(t["kernel_ms"], t["protocol_ms"])
        r = [b / c if b > 0 and c > 0 else float("nan") for b, c in zip(base, cand, strict=False)]  # by iteration
        est = estimate(t["baseline_ms"], t["kernel_ms"], t["protocol_ms"], t.get("disturbed"))
        s = sorted(x for x in r if x == x)
        row = {
            "n": len(r),
            "basis": est.basis,
            "blocks": est.blocks,
            "speedup": round(est.speedup, 4),
            "interval": [round(est.lo, 4), round(est.hi, 4)],
            "half_width": round(est.relative_half_width, 4),
            "baseline_first": round(statistics.median(r[0::2]), 4),
            "candidate_first": round(statistics.median(r[1::2]), 4) if len(r) > 1 else None,
            "ratio_p90_over_p10": round(s[9 * len(s) // 10] / s[len(s) // 10], 3),
        }
        print(f"{path.parent.name:28} {json.dumps(row)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
