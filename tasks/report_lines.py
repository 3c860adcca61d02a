"""How an evaluation report reads: the printed lines of a built report (tasks.report builds it).

Pure: a typed report in, text out. Every text a job chose reached the report through
protocol.printable when it was built (tasks.report.build_report), so nothing here escapes again.
"""

from __future__ import annotations

import math

from kcoral.tasks.calibration import ONE_WINDOW_S, span_s
from kcoral.tasks.documents import EvalReport, WorkloadRow
from kcoral.tasks.harness.schema import Outcome
from kcoral.tasks.harness.stats import compare_intervals
from kcoral.tasks.packs import headline as packs_headline


def with_lines(report: EvalReport) -> EvalReport:
    """The report with its printed lines."""
    return report.but(lines=report_lines(report))


#: the most lines of one workload's failure that are printed (report.json holds it whole)
REASON_LINES = 12


def holdout_line(report: EvalReport) -> str:
    if report.check:
        return "check: the public workloads' correctness only (no holdout, nothing timed, no score)"
    if report.holdout is Outcome.PASS:
        return "holdout correctness: PASS"
    kind = "wrong values" if report.holdout_failure is Outcome.FAIL else "an error or a crash"
    return (
        f"holdout correctness: FAIL ({kind} on a secret probe: its shapes and values are not given; "
        "the public workloads below were checked, not timed)"
    )


def time_line(phases: dict[str, float]) -> str:
    """``time: start 1.6 s, holdout 2.0 s, checks 0.7 s, timing standard 6.5 s`` (the workloads' checks
    summed: report.json keeps each)."""
    checks = [v for k, v in phases.items() if k.startswith("check ")]
    parts = [f"{k} {v:.1f} s" for k, v in phases.items() if not k.startswith(("check ", "timing "))]
    if checks:
        parts.append(f"checks {sum(checks):.1f} s")
    parts += [f"{k} {v:.1f} s" for k, v in phases.items() if k.startswith("timing ")]
    return "time: " + ", ".join(parts)


def uncalibrated_rows(report: EvalReport) -> list[WorkloadRow]:
    """The timed workloads whose slot had no A/A calibration of the task (none in an A/A request: it is
    one)."""
    if report.calibration:
        return []
    return [r for r in report.workloads if r.speedup is not None and r.calibration is None]


def report_lines(report: EvalReport) -> list[str]:
    """The printed report: the holdout, each workload, the flags and reasons, the summary."""
    lines = [holdout_line(report)]
    shown: dict[str, str] = {}  # a failure's text -> the workload it was first printed for
    for row in report.workloads:
        lines += workload_lines(row, shown)
    for flag in report.flags:
        lines.append(f"flagged: {flag}")
    lines += [f"inconclusive: {why}" for why in report.inconclusive]
    uncalibrated = uncalibrated_rows(report)
    if uncalibrated:
        assumed = [r.assumed_floor for r in uncalibrated if r.assumed_floor]
        lines.append(UNCALIBRATED_ASSUMED.format(max(assumed)) if assumed else UNCALIBRATED)
    if report.position:
        lines.append(f"uncorrected position: {report.position}")
    s = report.summary
    if s is not None:
        lines.append(
            f"baseline: {s.baseline_ms:.6f} ms kernel: {s.kernel_ms:.6f} ms speedup: {s.speedup:.4f}x "
            f"(95% CI {s.speedup_lo:.4f}-{s.speedup_hi:.4f}; min {s.min_speedup:.4f}x max {s.max_speedup:.4f}x): "
            f"{compare_intervals(s.speedup_lo, s.speedup_hi)} against the baseline"
        )
    if report.suite:
        lines.append(packs_headline.line(report.suite))
    if report.phases:
        lines.append(time_line(report.phases))
    tail = (
        " (a check: no score)"
        if report.check
        else ""
        if report.holdout is Outcome.PASS
        else " (the holdout failed: no score)"
    )
    lines.append(f"passed: {report.passed}/{report.total}{tail}")
    return lines


def workload_lines(row: WorkloadRow, shown: dict[str, str]) -> list[str]:
    """One workload's lines: its verdict and errors, its times, and its first failure unless an earlier
    workload printed the same (``shown``: a failure's text -> that workload, added to)."""
    head = f"workload {row.id:<20} {'timed' if row.timed else 'check':<5} {row.verdict}"
    if row.note:
        head += f" ({row.note})"
    elif row.verdict is Outcome.PASS and row.timed and (row.stopped_by or "").startswith("noisy"):
        head += " (a busy host: measured longer)"
    elif row.verdict is Outcome.PASS and row.timed:
        head += " (STABLE)"
    errs = [f"{n} rms={s.get('rms_ratio', 0):.2e} max={s.get('max_abs_err', 0):.3g}" for n, s in row.stats.items() if s]
    if errs:
        head += "  " + "  ".join(errs)
    lines = [head, *time_lines(row), *(f"    warning: {w}" for w in row.warnings or [])]
    if row.reason and row.reason in shown:
        lines.append(f"    the same failure as workload {shown[row.reason]}")
    elif row.reason:
        shown[row.reason] = row.id
        text = row.reason.splitlines()
        lines.append(f"    first failure: {text[0]}")
        lines += [f"    {line}" for line in text[1:REASON_LINES]]
        if len(text) > REASON_LINES:
            lines.append(f"    ({len(text) - REASON_LINES} more lines in report.json)")
    return lines


def time_lines(row: WorkloadRow) -> list[str]:
    """A timed workload's figures: times and speedup, its batches, a drift, the floor, the GPU."""
    lines = []
    if row.speedup is not None:
        protocol = (
            f", {row.protocol_share or 0:.0%} of a call: raw ratio" if row.basis == "raw" else " per call subtracted"
        )
        left_out = f"; {row.disturbed} disturbed left out" if row.disturbed else ""
        count = f"n={row.samples} batches of {row.batch} calls" if row.batch else f"n={row.samples}"
        lines.append(
            f"    baseline {row.baseline_ms:.6f} ms  kernel {row.kernel_ms:.6f} ms  "
            f"speedup {row.speedup:.4f}x [95% CI {row.speedup_lo:.4f}, {row.speedup_hi:.4f}]"
            f"  {count} ({row.stopped_by}{left_out}; protocol {row.protocol_ms:.4f} ms{protocol})"
        )
        if row.batch:
            lines.append("    " + batch_line(row))
        elif row.batch_asked:
            lines.append(
                f"    timed one call at a time: the task asks for batches of {row.batch_asked} calls, and the GPU's "
                "free memory did not hold two calls' buffers"
            )
    if row.drifted and row.speedup_halves:
        first, second = row.speedup_halves
        lines.append(
            f"    the host's speed changed while it was timed: the first half of the samples gave "
            f"{first:.4f}x, the second {second:.4f}x (the interval covers both)"
        )
    if row.calibration is not None:
        lines.append("    " + calibration_line(row))
    elif row.assumed_floor and row.speedup_within:
        lo, hi = row.speedup_within
        floor = row.assumed_floor
        lines.append(f"    this request alone: [{lo:.4f}, {hi:.4f}] (+-{floor:.0%} assumed between requests)")
    if row.gpu_clock_mhz is not None:
        lines.append("    " + gpu_line(row))
    return lines


def batch_line(row: WorkloadRow) -> str:
    """What a batch-mode score is, and the per-call figure measured beside it."""
    if row.graph:
        head = (
            f"timed in batches of {row.batch} calls captured once in a CUDA graph and replayed, each call on "
            "fresh inputs, every output checked"
        )
        single = "one call at a time (each its own graph)"
    else:
        head = f"timed in batches of {row.batch} calls back to back, each on fresh inputs, every output checked"
        single = "one call at a time"
    if row.batch_asked:
        head += f" (the task asks for {row.batch_asked}: the GPU's free memory held {row.batch})"
    if not row.per_call_speedup:
        return head + f"; {single}: not measured"
    s, lo, hi = row.per_call_speedup
    return head + f"; {single}: {s:.4f}x [{lo:.4f}, {hi:.4f}]"


def gpu_line(row: WorkloadRow) -> str:
    cooled = f"; let cool {row.cooled_s:.1f} s first" if row.cooled_s else ""
    return (
        f"GPU while timed: SM clock median {row.gpu_clock_mhz:.0f} MHz (lowest {row.gpu_clock_min_mhz:.0f}), "
        f"up to {row.gpu_temp_c:.0f} C; {row.throttled} iterations with the GPU slowed for heat or power, left out"
        f"{cooled}"
    )


#: the line of a report with a speedup and no A/A calibration of its slot
UNCALIBRATED = (
    "uncalibrated: this slot has no A/A calibration for the task, so the interval is this request's alone "
    "(`kcoral calibrate TASK` measures the noise between requests)"
)


#: ... when the method's uncalibrated_floor was assumed in its place
UNCALIBRATED_ASSUMED = (
    "uncalibrated: this slot has no A/A calibration for the task: its interval holds an assumed +-{:.0%} of "
    "noise between requests (`kcoral calibrate TASK` measures this slot's)"
)


def calibration_line(row: WorkloadRow) -> str:
    """What the slot's A/A calibration added to a timed workload's figures."""
    floor = row.calibration or {}
    lo, hi = row.speedup_within or (row.speedup_lo, row.speedup_hi)
    seconds = span_s(floor)
    span = "" if seconds is None else f" over {seconds / 60:.1f} min"
    if seconds is not None and seconds < ONE_WINDOW_S:
        span += " (one window of the host's time: a noisier spell can lie outside it)"
    return (
        f"calibrated: {floor['requests']} A/A requests{span} on this slot put the candidate's position at "
        f"{floor['position_ms']:+.4f} ms per call (taken off its calls) and the noise between requests at "
        f"+-{math.expm1(floor['half_width']):.2%}; this request alone: [{lo:.4f}, {hi:.4f}]"
    )
