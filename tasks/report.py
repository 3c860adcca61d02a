"""The evaluation report: the judge's verdicts, the candidate's timing claims bounded by what the
server knows (trusted baseline, physical floor, speedup limit), and the printed lines.

Pure: data in, data out. The holdout reports PASS or FAIL only, and a FAIL ends the report.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from tasks.harness.stats import geomean_ci, median, speedup_ci
from tasks.wallclock import per_call_ms

#: the candidate-side baseline median may be slower than the judge's own by this much (task may override)
BASELINE_DRIFT_LIMIT = 0.25
#: a claimed kernel median below this share of the server-clocked time per call is not believed
WALL_CLAIM_FLOOR = 0.6
#: a claimed speedup above the server-clocked speedup by more than this factor is not believed
WALL_SPEEDUP_SLACK = 1.5


def build_report(task_manifest: dict[str, Any], cases: dict[str, Any], verdicts: dict[str, Any],
                 claims: dict[str, Any], trusted: dict[str, list[float]],
                 walls: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    holdout = [c for c in cases["cases"] if c["phase"] == "holdout"]
    workloads = [c for c in cases["cases"] if c["phase"] == "workload"]
    holdout_pass = all(verdicts.get(c["id"], {}).get("verdict") == "PASS" for c in holdout)
    report: dict[str, Any] = {"task": cases["task"], "holdout": "PASS" if holdout_pass else "FAIL",
                              "holdout_probes": len(holdout), "workloads": [], "flags": []}
    tampered = claims.get("tampered") or []
    if tampered:
        report["flags"].append(f"the candidate replaced harness functions: {', '.join(tampered)}")
    if not holdout_pass:
        report["passed"] = 0
        report["total"] = len(workloads)
        return report
    cis = []
    for case in workloads:
        v = verdicts.get(case["id"], {"verdict": "ERROR", "reason": "no verdict"})
        row: dict[str, Any] = {"id": case["workload"], "params": case["params"], "timed": case["timed"],
                               "verdict": v["verdict"], "reason": v.get("reason", ""), "stats": v.get("stats", {})}
        claim = claims.get("cases", {}).get(case["id"], {})
        if case["timed"] and v["verdict"] in ("PASS", "FLAKY"):
            row.update(_timing(case, claim, trusted.get(case["id"], []), task_manifest, report["flags"]))
            if "speedup" in row and walls is not None:
                row.update(_wall_bound(case, row, walls.get(case["id"]), claim, report["flags"]))
            if "speedup" in row:
                cis.append((row["speedup"], row["speedup_lo"], row["speedup_hi"]))
        report["workloads"].append(row)
    report["passed"] = sum(1 for r in report["workloads"] if r["verdict"] == "PASS")
    report["total"] = len(workloads)
    if cis:
        g, lo, hi = geomean_ci(cis)
        timed_rows = [r for r in report["workloads"] if "speedup" in r]
        report["summary"] = {"speedup": g, "speedup_lo": lo, "speedup_hi": hi,
                             "baseline_ms": statistics.fmean(r["baseline_ms"] for r in timed_rows),
                             "kernel_ms": statistics.fmean(r["kernel_ms"] for r in timed_rows),
                             "min_speedup": min(c[0] for c in cis), "max_speedup": max(c[0] for c in cis)}
    return report


def _timing(case: dict[str, Any], claim: dict[str, Any], trusted: list[float], manifest: dict[str, Any],
            flags: list[str]) -> dict[str, Any]:
    base, kern = claim.get("baseline_ms") or [], claim.get("kernel_ms") or []
    if len(base) < 3 or len(kern) < 3 or min(base + kern) <= 0:
        flags.append(f"{case['workload']}: no usable timing samples from the candidate's process")
        return {}
    s, lo, hi = speedup_ci(base, kern)
    row = {"baseline_ms": median(base), "kernel_ms": median(kern), "speedup": s, "speedup_lo": lo,
           "speedup_hi": hi, "samples": len(kern), "stopped_by": claim.get("stopped_by", ""),
           "raw_baseline_ms": base, "raw_kernel_ms": kern}
    floor = manifest.get("floor_ms")
    if floor and row["kernel_ms"] < floor:
        flags.append(f"{case['workload']}: kernel time {row['kernel_ms']:.4f} ms is below the physical floor "
                     f"{floor} ms")
    limit = manifest.get("max_speedup")
    if limit and s > limit:
        flags.append(f"{case['workload']}: speedup {s:.2f}x is above this task's limit of {limit}x")
    if trusted:
        row["trusted_baseline_ms"] = median(trusted)
        drift = row["baseline_ms"] / row["trusted_baseline_ms"] - 1
        # Only a slowed baseline inflates the speedup; a faster one means the judge's figure was noisy.
        if drift > manifest.get("baseline_drift_limit", BASELINE_DRIFT_LIMIT):
            flags.append(f"{case['workload']}: the baseline took {row['baseline_ms']:.4f} ms in the candidate's "
                         f"process but {row['trusted_baseline_ms']:.4f} ms in the judge's ({drift:+.0%})")
    return row


def _wall_bound(case: dict[str, Any], row: dict[str, Any], entry: dict[str, Any] | None, claim: dict[str, Any],
                flags: list[str]) -> dict[str, Any]:
    """Hold the claims against the server's clock on the back-to-back batch."""
    name = case["workload"]
    if not entry or "problem" in entry:
        flags.append(f"{name}: {entry['problem'] if entry else 'no wall-clock markers reached the server'}")
        return {}
    calls = int(claim.get("wall_calls") or 0)
    if calls < 1:
        flags.append(f"{name}: the harness reported no wall-clock batch size")
        return {}
    wall_base, wall_kernel = per_call_ms(entry, calls)
    out = {"wall_baseline_ms": wall_base, "wall_kernel_ms": wall_kernel,
           "wall_speedup": wall_base / wall_kernel if wall_kernel > 0 else math.inf}
    if row["kernel_ms"] < WALL_CLAIM_FLOOR * wall_kernel:
        flags.append(f"{name}: claimed kernel time {row['kernel_ms']:.4f} ms is below what the server's clock saw "
                     f"({wall_kernel:.4f} ms per call back to back)")
    if row["speedup"] > max(1.2, WALL_SPEEDUP_SLACK * out["wall_speedup"]):
        flags.append(f"{name}: claimed speedup {row['speedup']:.2f}x is not borne out by the server's clock "
                     f"({out['wall_speedup']:.2f}x)")
    return out


def passed(report: dict[str, Any]) -> bool:
    return report["holdout"] == "PASS" and report["passed"] == report["total"] and not report["flags"]


def report_lines(report: dict[str, Any]) -> list[str]:
    lines = [f"holdout correctness: {report['holdout']}"]
    if report["holdout"] != "PASS":
        lines.append(f"passed: 0/{report['total']} (the holdout failed: the evaluation ends here)")
        lines += [f"flagged: {f}" for f in report["flags"]]
        return lines
    for row in report["workloads"]:
        head = f"workload {row['id']:<20} {'timed' if row['timed'] else 'check':<5} {row['verdict']}"
        if row["verdict"] == "PASS":
            head += " (STABLE)" if row["timed"] else ""
        errs = [f"{n} rms={s.get('rms_ratio', 0):.2e} max={s.get('max_abs_err', 0):.3g}"
                for n, s in row.get("stats", {}).items() if s]
        if errs:
            head += "  " + "  ".join(errs)
        lines.append(head)
        if "speedup" in row:
            lines.append(f"    baseline {row['baseline_ms']:.6f} ms  kernel {row['kernel_ms']:.6f} ms  "
                         f"speedup {row['speedup']:.4f}x [95% CI {row['speedup_lo']:.4f}, {row['speedup_hi']:.4f}]"
                         f"  n={row['samples']} ({row['stopped_by']})")
        if row["reason"]:
            lines.append(f"    first failure: {row['reason']}")
    for flag in report["flags"]:
        lines.append(f"flagged: {flag}")
    summary = report.get("summary")
    if summary:
        lines.append(f"baseline: {summary['baseline_ms']:.6f} ms kernel: {summary['kernel_ms']:.6f} ms "
                     f"speedup: {summary['speedup']:.4f}x (95% CI {summary['speedup_lo']:.4f}-"
                     f"{summary['speedup_hi']:.4f}; min {summary['min_speedup']:.4f}x max "
                     f"{summary['max_speedup']:.4f}x)")
    lines.append(f"passed: {report['passed']}/{report['total']}")
    return lines
