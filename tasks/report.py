"""The evaluation report: the supervisor's verdicts and measurements, the physical floor and the
task's speedup limit, and the printed lines.

Pure: data in, data out. Every figure comes from the supervisor (tasks.harness.supervisor), a
trusted process; nothing the candidate printed or wrote is read. A call's time is its raw time on
the supervisor's clock less the protocol's fixed cost measured in the same iteration (the same
call sequence around a call that does nothing); the speedup is tasks.harness.stats.estimate's, over
the iterations the supervisor did not mark disturbed (net, or the raw ratio where the protocol's
cost dominates the calls). The holdout reports PASS or FAIL (and which kind
of failure) only; after a FAIL the public workloads are still checked and reported, untimed, with
no score.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from typing import Any

from kcoral.protocol.printable import printable
from kcoral.tasks.calibration import NoiseFloor, widen
from kcoral.tasks.documents import EvalReport, SampleTimes, WorkloadRow
from kcoral.tasks.harness.schema import Case, CaseFile, CaseResult, Outcome, Phase, SupervisorResult, Timing
from kcoral.tasks.harness.stats import (
    DISTURBED_LIMIT,
    compare_intervals,
    estimate,
    geomean_ci,
    median,
    min_samples,
    net_samples,
    too_disturbed,
)
from kcoral.tasks.packs import headline as packs_headline


def build_report(
    task_manifest: dict[str, Any],
    cases: CaseFile,
    result: SupervisorResult,
    check: bool = False,
    floors: Mapping[str, NoiseFloor] | None = None,
) -> EvalReport:
    """The report of one evaluation (its printed lines are added by :func:`with_lines`); ``check``:
    the public workloads' correctness only (no holdout, nothing timed, no score); ``floors``: the
    slot's A/A calibration per timed workload (tasks.calibration), folded into its figures."""
    return EvalReport.model_validate(_report(task_manifest, cases, result, check, floors or {}))


def _report(
    task_manifest: dict[str, Any],
    cases: CaseFile,
    result: SupervisorResult,
    check: bool,
    floors: Mapping[str, NoiseFloor],
) -> dict[str, Any]:
    by_id = {c.id: c for c in result.cases}
    holdout = [c for c in cases.cases if c.phase is Phase.HOLDOUT]
    workloads = [c for c in cases.cases if c.phase is Phase.WORKLOAD]
    holdout_pass = all(_result(by_id, c).outcome is Outcome.PASS for c in holdout)
    report: dict[str, Any] = {
        "task": cases.task,
        "holdout": None if check else "PASS" if holdout_pass else "FAIL",
        "check": check,
        "holdout_probes": len(holdout),
        "workloads": [],
        "flags": [printable(f) for f in result.interference],
        "cpu_watch": result.cpu_watch,
        "phases": {printable(k): round(v, 3) for k, v in result.phases.items()},
    }
    if not holdout_pass:
        # which kind of failure (FAIL: wrong values, ERROR: an exception or a crash), never its details
        report["holdout_failure"] = next(
            r.outcome.value for c in holdout if (r := _result(by_id, c)).outcome is not Outcome.PASS
        )
    cis = []
    unmeasured: list[str] = []
    for case in workloads:
        res = _result(by_id, case)
        row: dict[str, Any] = {
            "id": case.workload,
            "params": case.params,
            "timed": case.timed,
            "verdict": res.outcome.value,
            "reason": printable(res.reason, newlines=True),
            "stats": res.stats,
        }
        if case.timed and not holdout_pass:
            row["note"] = "not timed: the holdout failed"
        elif case.timed and res.timing is not None and res.outcome is Outcome.PASS:
            floor = floors.get(case.workload)
            row.update(timing_row(case.workload, res.timing, task_manifest, report["flags"], unmeasured, floor))
            if "speedup" in row:
                cis.append((row["speedup"], row["speedup_lo"], row["speedup_hi"]))
        report["workloads"].append(row)
    report["passed"] = sum(1 for r in report["workloads"] if r["verdict"] == "PASS")
    report["total"] = len(workloads)
    report["inconclusive"] = unmeasured + [
        too_uncertain(r)
        for r in report["workloads"]
        if "speedup" in r and r["speedup_hi"] > INCONCLUSIVE_RATIO * r["speedup_lo"]
    ]
    if cis and not report["inconclusive"]:
        g, lo, hi = geomean_ci(cis)
        timed_rows = [r for r in report["workloads"] if "speedup" in r]
        report["summary"] = {
            "speedup": g,
            "speedup_lo": lo,
            "speedup_hi": hi,
            "baseline_ms": statistics.fmean(r["baseline_ms"] for r in timed_rows),
            "kernel_ms": statistics.fmean(r["kernel_ms"] for r in timed_rows),
            "min_speedup": min(c[0] for c in cis),
            "max_speedup": max(c[0] for c in cis),
        }
    suite = packs_headline.headline(task_manifest, report)
    if suite is not None:
        report["suite"] = suite
    return report


def too_uncertain(row: dict[str, Any]) -> str:
    """Why a row's speedup cannot be scored, and whose times made it so: the submission's own (they
    vary far more than the baseline's, timed in the same run on the same host: evaluating again will
    not help) or the host's (both vary)."""
    head = (
        f"{row['id']}: the speedup's 95% interval [{row['speedup_lo']:.4f}, {row['speedup_hi']:.4f}] is wider "
        f"than x{INCONCLUSIVE_RATIO:g} from end to end: "
    )
    mine, theirs = row["kernel_spread"], row["baseline_spread"]
    spreads = f"interquartile range {mine:.0%} of the median; the baseline's, timed alongside it, {theirs:.0%}"
    if mine > UNSTEADY_SPREAD and mine > UNSTEADY_FACTOR * theirs:
        return head + f"the submission's own call times vary too much to score ({spreads})"
    return head + f"the host was too noisy to time it (the submission's {spreads}; evaluate again)"


def spread(xs: list[float]) -> float:
    """The interquartile range over the median (0 for fewer than 4 samples)."""
    if len(xs) < 4 or median(xs) <= 0:
        return 0.0
    q1, _, q3 = statistics.quantiles(xs, n=4)
    return (q3 - q1) / median(xs)


def _result(by_id: dict[str, CaseResult], case: Case) -> CaseResult:
    return by_id.get(case.id) or CaseResult(case.id, Outcome.ERROR, "the case was not run")


def timing_row(
    name: str,
    timing: Timing,
    manifest: dict[str, Any],
    flags: list[str],
    unmeasured: list[str],
    floor: NoiseFloor | None = None,
) -> dict[str, Any]:
    """A timed workload's figures. What the submission did wrong goes to ``flags`` (a kernel time below
    the physical floor, a speedup above the task's limit: the evaluation fails); what made the times
    unusable goes to ``unmeasured`` (too few samples, too many iterations disturbed on the judge's
    side, times not clear of the protocol's fixed cost: the host's noise or a call too short to time,
    and the evaluation is inconclusive, not failed). The times are the medians over the iterations not
    disturbed, net of the protocol's cost; the speedup is :func:`estimate`'s. With the slot's ``floor``
    (its A/A calibration), the candidate's calls are less its position's cost and the interval is
    widened by the spread between requests (tasks.calibration)."""
    iterations = min(len(timing.baseline_ms), len(timing.kernel_ms), len(timing.null_ms))
    if iterations < 3:
        unmeasured.append(f"{name}: too few timing samples ({iterations})")
        return {}
    marks = [i < len(timing.disturbed) and timing.disturbed[i] for i in range(iterations)]
    kept = [i for i in range(iterations) if not marks[i]]
    dropped = iterations - len(kept)
    if too_disturbed(marks):
        waits = [w for w, m in zip(timing.judge_wait_ms, marks, strict=False) if m]
        lost = (
            f" (the judge's side lost a median {median(waits):.3f} ms each to waiting for a CPU or to interrupts)"
            if waits
            else ""
        )
        unmeasured.append(
            f"{name}: {dropped} of {iterations} timed iterations were disturbed{lost}, more "
            f"than {DISTURBED_LIMIT:.0%}: the host was too busy to time it (evaluate again)"
        )
        return {"protocol_ms": median(timing.null_ms[:iterations]), "disturbed": dropped}
    if timing.shared_core_share > SHARED_CORE_LIMIT and timing.shared_core_ms >= SHARED_CORE_MIN_MS:
        unmeasured.append(
            f"{name}: other work on the host ran on the submission's core during {timing.shared_core_share:.0%} of "
            f"its timed calls ({timing.shared_core_ms:.0f} ms), more than {SHARED_CORE_LIMIT:.0%}: its times are not "
            "its own (evaluate again on a quieter host)"
        )
        return {"shared_core_share": timing.shared_core_share}
    protocol = median([timing.null_ms[i] for i in kept])
    base = net_samples([timing.baseline_ms[i] for i in kept], [timing.null_ms[i] for i in kept])
    position = floor.position_ms if floor is not None else 0.0
    kern = [k - position for k in net_samples([timing.kernel_ms[i] for i in kept], [timing.null_ms[i] for i in kept])]
    if median(base) <= 0 or median(kern) <= 0:
        unmeasured.append(
            f"{name}: a median call time is not above the protocol's fixed cost ({protocol:.4f} ms): "
            "the call is too short to measure this way"
        )
        return {"protocol_ms": protocol}
    est = estimate(timing.baseline_ms, timing.kernel_ms, timing.null_ms, marks, position_ms=position)
    if est.blocks < min_samples():
        unmeasured.append(
            f"{name}: too few timing samples ({est.blocks} pairs of consecutive iterations left; "
            f"an interval needs {min_samples()})"
        )
        return {"protocol_ms": protocol, "disturbed": est.disturbed}
    s, lo, hi = est.speedup, est.lo, est.hi
    if lo <= 0 or not math.isfinite(hi):
        unmeasured.append(
            f"{name}: the call times do not stand clear of the protocol's fixed cost ({protocol:.4f} ms): "
            "no speedup can be given"
        )
        return {"protocol_ms": protocol}
    within = (lo, hi)
    if floor is not None:
        lo, hi = widen(s, lo, hi, floor)
    row = {
        "baseline_ms": median(base),
        "kernel_ms": median(kern),
        "speedup": s,
        "speedup_lo": lo,
        "speedup_hi": hi,
        "samples": iterations,
        "speedup_halves": list(est.halves) if est.halves else None,
        "drifted": est.drifted,
        "basis": est.basis,
        "protocol_share": est.protocol_share,
        "disturbed": est.disturbed,
        "baseline_spread": spread(base),
        "kernel_spread": spread(kern),
        "stopped_by": timing.stopped_by + (", measured twice" if timing.remeasured else ""),
        "protocol_ms": protocol,
        "idle_cpu_ms": timing.idle_cpu_ms,
        "idle_cpu_share": timing.idle_cpu_share,
        "early_cpu_ms": timing.early_cpu_ms,
        "early_cpu_share": timing.early_cpu_share,
        "shared_core_share": timing.shared_core_share,
        "speedup_within": list(within),
        "calibration": floor.document() if floor is not None else None,
        **gpu_figures(timing),
        **batch_figures(name, timing, within, flags),
    }
    floor = manifest.get("floor_ms")
    if floor and row["kernel_ms"] < floor:
        flags.append(f"{name}: kernel time {row['kernel_ms']:.4f} ms is below the physical floor {floor} ms")
    limit = manifest.get("max_speedup")
    if limit and s > limit:
        flags.append(f"{name}: speedup {s:.2f}x is above this task's limit of {limit}x")
    return row


def sample_times(cases: CaseFile, result: SupervisorResult) -> dict[str, SampleTimes]:
    """Each timed workload's raw samples and disturbed marks (for the receipt: what stats.estimate needs to
    redo the speedup), from the supervisor's result."""
    by_id = {c.id: c for c in result.cases}
    return {
        case.workload: SampleTimes(
            baseline_ms=t.baseline_ms,
            kernel_ms=t.kernel_ms,
            protocol_ms=t.null_ms,
            disturbed=t.disturbed or None,
            judge_wait_ms=t.judge_wait_ms or None,
        )
        for case in cases.cases
        if case.phase is Phase.WORKLOAD and case.timed and (t := _result(by_id, case).timing) is not None
    }


def with_lines(report: EvalReport) -> EvalReport:
    """The report with its printed lines."""
    return report.model_copy(update={"lines": report_lines(report)})


#: a timed workload whose speedup interval spans more than this ratio (hi / lo) cannot be scored: the
#: evaluation is inconclusive, not failed. Quiet runs of the baseline's own code on a 2-core CI host
#: give intervals up to ~x1.6 wide; the supervisor samples on until x2 (TimingMethod.scorable_ratio)
#: (bench/results/eval-spread-loaded.json)
INCONCLUSIVE_RATIO = 3.0
#: a timed workload whose candidate calls ran beside others' work on the candidate's core for more than
#: this share of their time is not scored (tasks.harness.interference): the host slowed one side only.
#: Idle, this 2-core VM's other processes took 0-2% of it; one busy loop beside the demo, ~60%
SHARED_CORE_LIMIT = 0.1
#: ... and only past this many ms in all: the core's time is read in clock ticks of 10 ms, and each call's
#: window also holds the writing of its inputs, while the candidate's core is idle and the host's own
#: processes may use it, so over a short measurement (the CPU demo's candidate calls take ~0.2 s in all) a
#: few ticks of them would pass the share alone: a quiet CI run once saw 52 ms (24%) so; one busy loop
#: beside the demo gives 240-310 ms
SHARED_CORE_MIN_MS = 100.0
#: a submission whose call times' spread is above this and UNSTEADY_FACTOR times the baseline's (timed
#: alongside it) is itself what cannot be timed, not the host
UNSTEADY_SPREAD = 0.25
UNSTEADY_FACTOR = 3.0
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


def report_lines(report: EvalReport) -> list[str]:
    lines = [holdout_line(report)]
    shown: dict[str, str] = {}  # a failure's text -> the workload it was first printed for
    for row in report.workloads:
        head = f"workload {row.id:<20} {'timed' if row.timed else 'check':<5} {row.verdict}"
        if row.note:
            head += f" ({row.note})"
        elif row.verdict is Outcome.PASS and row.timed and (row.stopped_by or "").startswith("noisy"):
            head += " (a busy host: measured longer)"
        elif row.verdict is Outcome.PASS and row.timed:
            head += " (STABLE)"
        errs = [
            f"{n} rms={s.get('rms_ratio', 0):.2e} max={s.get('max_abs_err', 0):.3g}" for n, s in row.stats.items() if s
        ]
        if errs:
            head += "  " + "  ".join(errs)
        lines.append(head)
        if row.speedup is not None:
            protocol = (
                f", {row.protocol_share or 0:.0%} of a call: raw ratio"
                if row.basis == "raw"
                else " per call subtracted"
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
        if row.drifted and row.speedup_halves:
            first, second = row.speedup_halves
            lines.append(
                f"    the host's speed changed while it was timed: the first half of the samples gave "
                f"{first:.4f}x, the second {second:.4f}x (the interval covers both)"
            )
        if row.calibration is not None:
            lines.append("    " + calibration_line(row))
        if row.gpu_clock_mhz is not None:
            lines.append("    " + gpu_line(row))
        if row.reason and row.reason in shown:
            lines.append(f"    the same failure as workload {shown[row.reason]}")
        elif row.reason:
            shown[row.reason] = row.id
            text = row.reason.splitlines()
            lines.append(f"    first failure: {text[0]}")
            lines += [f"    {line}" for line in text[1:REASON_LINES]]
            if len(text) > REASON_LINES:
                lines.append(f"    ({len(text) - REASON_LINES} more lines in report.json)")
    for flag in report.flags:
        lines.append(f"flagged: {flag}")
    lines += [f"inconclusive: {why}" for why in report.inconclusive]
    if not report.calibration and any(r.speedup is not None and r.calibration is None for r in report.workloads):
        lines.append(UNCALIBRATED)
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


#: in the batch mode, a batch speedup whose interval lies wholly above the per-call one's by more than
#: this ratio is flagged: calls that run that much faster together than apart (for the candidate more
#: than for the baseline) did work of later calls ahead, or together, which the batch's clock cannot tell
#: from speed. Hiding launch gaps moves an honest submission's speedup by far less on tasks that choose
#: the batch mode (calls of milliseconds), and then usually down: the baseline's gaps hide too
BATCH_GAIN_LIMIT = 1.10


def batch_figures(name: str, timing: Timing, within: tuple[float, float], flags: list[str]) -> dict[str, Any]:
    """A batch-mode row's mode and the per-call measurement it is held against (``within``: the batch
    speedup's own interval); a flag when the batch gains far more than single calls do."""
    if timing.batch < 2:
        return {}
    row: dict[str, Any] = {"batch": timing.batch, "graph": timing.graph or None, "per_call_speedup": None}
    check = timing.per_call
    if check is None:
        return row
    est = estimate(check.baseline_ms, check.kernel_ms, check.null_ms, check.disturbed or None)
    if not (est.lo > 0 and math.isfinite(est.hi)):  # too few pairs give [0, inf] (stats.min_samples)
        return row
    row["per_call_speedup"] = [est.speedup, est.lo, est.hi]
    if within[0] > BATCH_GAIN_LIMIT * est.hi:
        flags.append(
            f"{name}: in batches the submission's calls measured {within[0]:.4f}x or more, one at a time at most "
            f"{est.hi:.4f}x: calls that run far faster together than apart did work of other calls ahead "
            f"(the batch mode times the sum; limit {BATCH_GAIN_LIMIT}x of the per-call figure)"
        )
    return row


def gpu_figures(timing: Timing) -> dict[str, Any]:
    """The GPU's clock and heat while a workload was timed (NVML, per iteration: tasks.harness.gpuclock);
    nothing where they were not read."""
    if not timing.sm_clock_mhz:
        return {}
    return {
        "gpu_clock_mhz": median(timing.sm_clock_mhz),
        "gpu_clock_min_mhz": min(timing.sm_clock_mhz),
        "gpu_temp_c": max(timing.temperature_c) if timing.temperature_c else None,
        "throttled": sum(timing.throttled),
        "cooled_s": timing.cooled_s,
    }


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


def calibration_line(row: WorkloadRow) -> str:
    """What the slot's A/A calibration added to a timed workload's figures."""
    floor = row.calibration or {}
    lo, hi = row.speedup_within or (row.speedup_lo, row.speedup_hi)
    return (
        f"calibrated: {floor['requests']} A/A requests on this slot put the candidate's position at "
        f"{floor['position_ms']:+.4f} ms per call (taken off its calls) and the noise between requests at "
        f"+-{math.expm1(floor['half_width']):.2%}; this request alone: [{lo:.4f}, {hi:.4f}]"
    )
