"""The evaluation report: the supervisor's verdicts and measurements, the physical floor and the
task's speedup limit, as a typed document (its printed lines: tasks.report_lines).

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
from dataclasses import dataclass, field
from typing import Any

from kcoral.protocol.printable import printable
from kcoral.tasks.batch_gain import batch_figures
from kcoral.tasks.calibration import NoiseFloor, assumed, gain_key, widen
from kcoral.tasks.documents import EvalReport, SampleTimes, Summary, WorkloadRow
from kcoral.tasks.harness.cpuwatch import shared_core_over
from kcoral.tasks.harness.schema import (
    Case,
    CaseFile,
    CaseResult,
    Outcome,
    Phase,
    SupervisorResult,
    Timing,
    TimingMethod,
)
from kcoral.tasks.harness.stats import (
    Speedup,
    estimate,
    geomean_ci,
    median,
    min_samples,
    net_samples,
    others_slack,
    too_disturbed,
)
from kcoral.tasks.packs import headline as packs_headline


def build_report(
    task_manifest: dict[str, Any],
    cases: CaseFile,
    result: SupervisorResult,
    check: bool = False,
    floors: Mapping[str, NoiseFloor] | None = None,
    assume_floor: bool = False,
) -> EvalReport:
    """The report of one evaluation (its printed lines are added by :func:`with_lines`); ``check``:
    the public workloads' correctness only (no holdout, nothing timed, no score); ``floors``: the
    slot's A/A calibration per timed workload (tasks.calibration), folded into its figures;
    ``assume_floor``: a workload with none gets the method's ``uncalibrated_floor`` instead (the server's
    evaluations; an A/A request and a check do not)."""
    by_id = {c.id: c for c in result.cases}
    holdout = [c for c in cases.cases if c.phase is Phase.HOLDOUT]
    failed = [r.outcome for c in holdout if (r := _result(by_id, c)).outcome is not Outcome.PASS]
    flags = [printable(f) for f in result.interference]  # the rows add theirs (timing_row)
    unmeasured: list[str] = []
    floors = dict(floors or {})
    method = cases.timing
    if assume_floor and method.uncalibrated_floor > 0:
        for c in cases.cases:
            if c.phase is Phase.WORKLOAD and c.workload not in floors:
                floors[c.workload] = assumed(c.workload, method.uncalibrated_floor)
    rows = [
        _workload_row(
            c,
            _result(by_id, c),
            not failed,
            task_manifest,
            flags,
            unmeasured,
            (floors.get(c.workload), floors.get(gain_key(c.workload))),
            method,
        )
        for c in cases.cases
        if c.phase is Phase.WORKLOAD
    ]
    scored = [r for r in rows if r.speedup is not None]
    too_wide = [r for r in scored if _too_wide(r, method.inconclusive_ratio)]
    inconclusive = unmeasured + [too_uncertain(r, method.inconclusive_ratio) for r in too_wide]
    report = EvalReport(
        task=cases.task,
        holdout=None if check else Outcome.FAIL if failed else Outcome.PASS,
        check=check,
        holdout_probes=len(holdout),
        # which kind of failure (FAIL: wrong values, ERROR: an exception or a crash), never its details
        holdout_failure=failed[0] if failed else None,
        workloads=rows,
        flags=flags,
        cpu_watch=result.cpu_watch,
        phases={printable(k): round(v, 3) for k, v in result.phases.items()},
        passed=sum(1 for r in rows if r.verdict is Outcome.PASS),
        total=len(rows),
        inconclusive=inconclusive,
        summary=_summary(scored) if scored and not inconclusive else None,
    )
    suite = packs_headline.headline(task_manifest, report.document())  # a problem pack's own headline
    return report if suite is None else report.but(suite=suite)


def _workload_row(
    case: Case,
    res: CaseResult,
    holdout_pass: bool,
    manifest: dict[str, Any],
    flags: list[str],
    unmeasured: list[str],
    floors: tuple[NoiseFloor | None, NoiseFloor | None],
    method: TimingMethod,
) -> WorkloadRow:
    """A public workload's row: its verdict and checks, and its figures if it was timed and passed
    (:func:`timing_row`); ``floors``: the slot's for its speedup and for its batch-gain ratio."""
    figures: dict[str, Any] = {}
    if case.timed and holdout_pass and res.timing is not None and res.outcome is Outcome.PASS:
        figures = timing_row(case.workload, res.timing, manifest, flags, unmeasured, floors[0], method, floors[1])
    return WorkloadRow(
        id=case.workload,
        params=case.params,
        timed=case.timed,
        verdict=res.outcome,
        reason=printable(res.reason, newlines=True),
        stats=res.stats,
        warnings=[printable(w) for w in res.warnings] or None,
        note="not timed: the holdout failed" if case.timed and not holdout_pass else None,
        **figures,
    )


def _too_wide(row: WorkloadRow, ratio: float) -> bool:
    """A scored row's interval is wider than ``ratio`` (TimingMethod.inconclusive_ratio) end to end: the
    measured one (a calibration's floor is measured; an assumed floor is not, and never makes a request
    unscorable by itself: then the request's own interval is judged)."""
    lo, hi = row.speedup_lo or 0.0, row.speedup_hi or 0.0
    if row.assumed_floor and row.speedup_within:
        lo, hi = row.speedup_within
    return hi > ratio * lo


def _summary(scored: list[WorkloadRow]) -> Summary:
    """The evaluation's score over its scored workloads: the geometric mean of their speedups with its
    interval, the mean times, the least and greatest speedup."""
    cis = [(r.speedup or 0.0, r.speedup_lo or 0.0, r.speedup_hi or 0.0) for r in scored]
    g, lo, hi = geomean_ci(cis)
    return Summary(
        speedup=g,
        speedup_lo=lo,
        speedup_hi=hi,
        baseline_ms=statistics.fmean(r.baseline_ms or 0.0 for r in scored),
        kernel_ms=statistics.fmean(r.kernel_ms or 0.0 for r in scored),
        min_speedup=min(c[0] for c in cis),
        max_speedup=max(c[0] for c in cis),
    )


def too_uncertain(row: WorkloadRow, ratio: float = TimingMethod.inconclusive_ratio) -> str:
    """Why a row's speedup cannot be scored, and whose times made it so: the submission's own (they
    vary far more than the baseline's, timed in the same run on the same host: evaluating again will
    not help) or the host's (both vary)."""
    head = (
        f"{row.id}: the speedup's 95% interval [{row.speedup_lo or 0.0:.4f}, {row.speedup_hi or 0.0:.4f}] is wider "
        f"than x{ratio:g} from end to end: "
    )
    mine, theirs = row.kernel_spread or 0.0, row.baseline_spread or 0.0
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
    method: TimingMethod = TimingMethod(),
    gain: NoiseFloor | None = None,
) -> dict[str, Any]:
    """A timed workload's figures. What the submission did wrong goes to ``flags`` (a kernel time below
    the physical floor, a speedup above the task's limit: the evaluation fails); what made the times
    unusable goes to ``unmeasured`` (too few samples, too many iterations disturbed on the judge's
    side, times not clear of the protocol's fixed cost: the host's noise or a call too short to time,
    and the evaluation is inconclusive, not failed). The times are the medians over the iterations not
    disturbed, net of the protocol's cost; the speedup is :func:`estimate`'s. With the slot's ``floor``
    (its A/A calibration), the candidate's calls are less its position's cost and the interval is
    widened by the spread between requests (tasks.calibration). ``method``: the judge's rules (the
    request's TimingMethod); ``gain``: the slot's floor for the batch-gain ratio (tasks.batch_gain.batch_figures)."""
    iterations = min(len(timing.baseline_ms), len(timing.kernel_ms), len(timing.null_ms))
    marks = [i < len(timing.disturbed) and timing.disturbed[i] for i in range(iterations)]
    measured = _host_refusal(name, timing, marks, method) or _measure(name, timing, marks, floor, method)
    if isinstance(measured, Refusal):
        unmeasured.append(measured.reason)
        return measured.row
    row = _scored_row(timing, measured, floor, iterations)
    row.update(batch_figures(name, timing, (measured.est.lo, measured.est.hi), flags, unmeasured, method, floor, gain))
    flags.extend(_beyond_the_task(name, row, manifest))
    return row


@dataclass
class Refusal:
    """Why a timed workload gets no speedup (the evaluation's ``inconclusive`` line), and the figures
    its row still shows."""

    reason: str
    row: dict[str, Any] = field(default_factory=dict)


@dataclass
class Measured:
    """A timed workload's estimate over its undisturbed iterations, with the medians it rests on."""

    est: Speedup
    base: list[float]
    kern: list[float]
    protocol: float


def _host_refusal(name: str, timing: Timing, marks: list[bool], method: TimingMethod) -> Refusal | None:
    """The host's reasons, read before any estimate: too few iterations, others' work on the submission's
    core (named first: it also keeps the keeper of that core from flushing it, which disturbs iterations),
    too many disturbed on the judge's side."""
    iterations = len(marks)
    if iterations < 3:
        return Refusal(f"{name}: too few timing samples ({iterations})")
    shares = (timing.shared_core_ms, timing.shared_core_share, method.shared_core_share, method.shared_core_ms)
    if shared_core_over(*shares):
        return Refusal(
            f"{name}: other work on the host ran on the submission's core during {timing.shared_core_share:.0%} of "
            f"its timed calls ({timing.shared_core_ms:.0f} ms), more than {method.shared_core_share:.0%}: its times "
            "are not its own (evaluate again on a quieter host)",
            {"shared_core_share": timing.shared_core_share},
        )
    if too_disturbed(marks, method.disturbed_limit):
        dropped = sum(marks)
        waits = [w for w, m in zip(timing.judge_wait_ms, marks, strict=False) if m]
        lost = (
            f" (the judge's side lost a median {median(waits):.3f} ms each to waiting for a CPU or to interrupts)"
            if waits
            else ""
        )
        return Refusal(
            f"{name}: {dropped} of {iterations} timed iterations were disturbed{lost}, more "
            f"than {method.disturbed_limit:.0%}: the host was too busy to time it (evaluate again)",
            {"protocol_ms": median(timing.null_ms[:iterations]), "disturbed": dropped},
        )
    return None


def _measure(
    name: str, timing: Timing, marks: list[bool], floor: NoiseFloor | None, method: TimingMethod
) -> Measured | Refusal:
    """The estimate over the undisturbed iterations, or why the times cannot give one (calls not clear
    of the protocol's fixed cost, too few pairs left)."""
    kept = [i for i, m in enumerate(marks) if not m]
    nulls = [timing.null_ms[i] for i in kept]
    protocol = median(nulls)
    base = net_samples([timing.baseline_ms[i] for i in kept], nulls)
    position = floor.position_ms if floor is not None else 0.0
    kern = [k - position for k in net_samples([timing.kernel_ms[i] for i in kept], nulls)]
    if median(base) <= 0 or median(kern) <= 0:
        return Refusal(
            f"{name}: a median call time is not above the protocol's fixed cost ({protocol:.4f} ms): "
            "the call is too short to measure this way",
            {"protocol_ms": protocol},
        )
    est = estimate(
        timing.baseline_ms,
        timing.kernel_ms,
        timing.null_ms,
        marks,
        position_ms=position,
        protocol_dominant=method.protocol_dominant,
    )
    if est.blocks < min_samples():
        return Refusal(
            f"{name}: too few timing samples ({est.blocks} pairs of consecutive iterations left; "
            f"an interval needs {min_samples()})",
            {"protocol_ms": protocol, "disturbed": est.disturbed},
        )
    if est.lo <= 0 or not math.isfinite(est.hi):
        return Refusal(
            f"{name}: the call times do not stand clear of the protocol's fixed cost ({protocol:.4f} ms): "
            "no speedup can be given",
            {"protocol_ms": protocol},
        )
    return Measured(est, base, kern, protocol)


def _scored_row(timing: Timing, m: Measured, floor: NoiseFloor | None, iterations: int) -> dict[str, Any]:
    """A scored workload's figures: the estimate's interval widened by the slot's ``floor``, the
    medians, the watches' figures (its own interval kept as ``speedup_within``)."""
    est = m.est
    lo, hi = widen(est.speedup, est.lo, est.hi, floor) if floor is not None else (est.lo, est.hi)
    hi *= others_slack(timing.shared_core_ms, timing.kernel_ms, timing.batch, est.basis, median(m.kern))
    return {
        "baseline_ms": median(m.base),
        "kernel_ms": median(m.kern),
        "speedup": est.speedup,
        "speedup_lo": lo,
        "speedup_hi": hi,
        "samples": iterations,
        "speedup_halves": list(est.halves) if est.halves else None,
        "drifted": est.drifted,
        "basis": est.basis,
        "protocol_share": est.protocol_share,
        "disturbed": est.disturbed,
        "baseline_spread": spread(m.base),
        "kernel_spread": spread(m.kern),
        "stopped_by": timing.stopped_by + (", measured twice" if timing.remeasured else ""),
        "protocol_ms": m.protocol,
        "idle_cpu_ms": timing.idle_cpu_ms,
        "idle_cpu_share": timing.idle_cpu_share,
        "early_cpu_ms": timing.early_cpu_ms,
        "early_cpu_share": timing.early_cpu_share,
        "shared_core_share": timing.shared_core_share,
        "speedup_within": [est.lo, est.hi],
        "calibration": floor.document() if floor is not None and floor.requests else None,
        "assumed_floor": math.expm1(floor.half_width) if floor is not None and not floor.requests else None,
        **gpu_figures(timing),
    }


def _beyond_the_task(name: str, row: dict[str, Any], manifest: dict[str, Any]) -> list[str]:
    """The flags of a score the task says cannot be: a kernel time below its physical floor, a speedup
    above its limit (the evaluation fails)."""
    flags = []
    floor = manifest.get("floor_ms")
    if floor and row["kernel_ms"] < floor:
        flags.append(f"{name}: kernel time {row['kernel_ms']:.4f} ms is below the physical floor {floor} ms")
    limit = manifest.get("max_speedup")
    if limit and row["speedup"] > limit:
        flags.append(f"{name}: speedup {row['speedup']:.2f}x is above this task's limit of {limit}x")
    return flags


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


#: a submission whose call times' spread is above this and UNSTEADY_FACTOR times the baseline's (timed
#: alongside it) is itself what cannot be timed, not the host
UNSTEADY_SPREAD = 0.25
UNSTEADY_FACTOR = 3.0


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
