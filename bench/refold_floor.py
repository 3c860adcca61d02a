"""What a slot's noise floor, as tasks.calibration builds it now, does to A/A requests already run.

    python3 bench/refold_floor.py CALIBRATE_JSON AA_JSON [AA_JSON ...] [--confidence 0.9] [--json FILE]

CALIBRATE_JSON is `kcoral calibrate --json`'s output (its slot's floor: requests, spread, own_down,
own_up); each AA_JSON is bench/calibration.py's (every request's speedup and its own interval,
``within``). The floor's half-width is rebuilt from the calibration's spread (the prediction interval,
the spread at its upper bound at ``--confidence``; 0 for the plain prediction interval) and folded into
each request's own interval by :func:`kcoral.tasks.calibration.widen`, as a report would: how many of
the intervals hold 1.0, and their median half-width. No new measurement: the same requests, refolded.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kcoral.tasks.calibration import NoiseFloor, prediction_half_width, widen  # noqa: E402


def slot_floor(calibrate: dict[str, Any], workload: str) -> NoiseFloor:
    """The calibration's floor for ``workload`` as `kcoral calibrate --json` printed it."""
    for slot in calibrate.get("calibrations", []):
        doc = slot.get("workloads", {}).get(workload)
        if doc:
            return NoiseFloor(**{**doc, "jobs": tuple(doc.get("jobs", ()))})
    raise SystemExit(f"refold_floor: no floor for workload {workload!r} in the calibration")


def refold(floor: NoiseFloor, runs: list[dict[str, Any]], confidence: float) -> dict[str, Any]:
    """The requests' intervals with ``floor`` rebuilt at ``confidence`` (0: no bound) and folded in."""
    half_width = prediction_half_width(floor.spread, floor.requests, confidence or None)
    rebuilt = replace(floor, half_width=half_width)
    held, widths = 0, []
    for run in runs:
        lo, hi = run["within"][0]
        s = run["speedup"]
        lo, hi = widen(s, lo, hi, rebuilt)
        held += lo <= 1.0 <= hi
        widths.append(max(s / lo, hi / s) - 1.0)
    return {
        "confidence": confidence,
        "floor": math.expm1(rebuilt.half_width),
        "requests": len(runs),
        "intervals_containing_1": held,
        "median_half_width": statistics.median(widths),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("calibrate", type=Path)
    parser.add_argument("aa", type=Path, nargs="+")
    parser.add_argument("--confidence", type=float, action="append")
    parser.add_argument("--workload", default="standard")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    floor = slot_floor(json.loads(args.calibrate.read_text()), args.workload)
    runs = [r for path in args.aa for r in json.loads(path.read_text())["runs"] if r.get("within")]
    if not runs:
        parser.error("no A/A request with its own interval (within) in the files given")
    rows = [refold(floor, runs, c) for c in (args.confidence or [0.0, 0.9])]
    for row in rows:
        print(
            f"confidence {row['confidence'] or 'none'}: floor +-{row['floor']:.3%}, "
            f"{row['intervals_containing_1']} of {row['requests']} hold 1.0, "
            f"median half-width {row['median_half_width']:.3%}"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
