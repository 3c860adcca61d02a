"""Each suite's own headline beside kcoral's figures (report.json's ``suite``, and one printed line).

KernelBench's ``fast_p`` counts a problem that is correct and faster than ``p`` x eager PyTorch
(its reference ``Model``, kcoral's baseline here): the headline is correctness, the speedup over
eager and ``fast_1``, by the point estimate as KernelBench reads it and by the whole 95% interval,
which counts only on a calibrated slot: an interval that is one request's alone left out the noise
between requests, and A/A requests of a KernelBench problem's own model on an uncalibrated slot had it
wholly above 1.0 three times in ten (bench/results/issue32-dev-vm; calibrated: none in ten).
GPU MODE ranks a submission by the geometric mean of its benchmarks' times: the headline is that
mean of the submission's median call times (ms), beside the reference's. Stdlib only: the server
builds reports without torch.
"""

from __future__ import annotations

import math
from typing import Any


def headline(manifest: dict[str, Any], report: dict[str, Any]) -> dict[str, Any] | None:
    """The suite's headline of a report (tasks.report's dict), or None for a task of kcoral's own."""
    pack = manifest.get("pack")
    if not isinstance(pack, dict) or report.get("check"):
        return None
    correct = report.get("holdout") == "PASS" and report["passed"] == report["total"]
    timed = [r for r in report["workloads"] if r.get("timed")]
    scored = [r for r in timed if "speedup" in r]
    summary = report.get("summary")
    if pack.get("format") == "kernelbench":
        doc: dict[str, Any] = {"format": "kernelbench", "correct": correct}
        if correct and summary is not None:
            calibrated = bool(scored) and all(r.get("calibration") for r in scored)
            doc["speedup_over_eager"] = summary["speedup"]
            doc["fast_1"] = summary["speedup"] > 1.0
            doc["fast_1_interval"] = summary["speedup_lo"] > 1.0  # the whole interval, calibrated or not
            doc["fast_1_certain"] = calibrated and doc["fast_1_interval"]
            doc["calibrated"] = calibrated
        return doc
    doc = {"format": "gpumode", "correct": correct}
    if correct and scored and len(scored) == len(timed) and summary is not None:
        doc["geomean_ms"] = _geomean([r["kernel_ms"] for r in scored])
        doc["reference_geomean_ms"] = _geomean([r["baseline_ms"] for r in scored])
    return doc


def line(doc: dict[str, Any]) -> str:
    """The headline's printed line."""
    if doc.get("format") == "kernelbench":
        if not doc.get("correct"):
            return "KernelBench: not correct (fast_p counts it for no p)"
        if "speedup_over_eager" not in doc:
            return "KernelBench: correct; no speedup over eager PyTorch (not timed or not scored)"
        sure = (
            "its whole 95% interval too"
            if doc["fast_1_certain"]
            else "its 95% interval too, but this slot is uncalibrated: not certain (kcoral calibrate TASK)"
            if doc.get("fast_1_interval")
            else "not its whole 95% interval"
        )
        return (
            f"KernelBench: correct, {doc['speedup_over_eager']:.4f}x over eager PyTorch: fast_1 "
            f"{'yes' if doc['fast_1'] else 'no'} ({sure})"
        )
    if not doc.get("correct"):
        return "GPU MODE: not correct (no ranking)"
    if "geomean_ms" not in doc:
        return "GPU MODE: correct; no geometric mean of the benchmarks' times (not timed or not scored)"
    return (
        f"GPU MODE: geometric mean of the benchmarks' times {doc['geomean_ms']:.6f} ms "
        f"(the reference's {doc['reference_geomean_ms']:.6f} ms)"
    )


def _geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))
