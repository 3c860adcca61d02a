"""The batch-gain check of a batch-mode workload: its calls timed back to back against the same calls
timed one at a time in the same request. A submission that does work of later calls ahead (while an
earlier call runs, or cached across the batch) gains in batches what it never gains alone; the check
flags a batch speedup beyond the task's limit times the per-call one, after the noise between requests.
Pure: figures in, a row's fields and flags out (tasks.report builds the row)."""

from __future__ import annotations

import math
from typing import Any

from kcoral.tasks.calibration import NoiseFloor
from kcoral.tasks.harness.schema import Timing, TimingMethod
from kcoral.tasks.harness.stats import estimate


def batch_figures(
    name: str,
    timing: Timing,
    within: tuple[float, float],
    flags: list[str],
    unmeasured: list[str],
    method: TimingMethod = TimingMethod(),
    floor: NoiseFloor | None = None,
    gain: NoiseFloor | None = None,
) -> dict[str, Any]:
    """A batch-mode row's mode and the per-call measurement it is held against (``within``: the batch
    speedup's own interval); a flag when the batch gains more than ``method.batch_gain_limit`` times
    what single calls do, beyond what honest requests' ratios on this slot reach. A per-call check that
    ran and gives no interval (its calls left out as disturbed on the judge's side, or too few pairs)
    goes to ``unmeasured``: the evaluation is inconclusive, since a batch score that cannot be held
    against single calls is not checked, and a check that is missing is never a pass.

    Single calls are timed in fresh processes each request as the batches are, and draw between
    requests even more (a short call's time is mostly its round trip): on an H100 the templates of 20
    pack problems measured 0.77-1.17x one call at a time against 0.93-1.10x in batches, each with own
    intervals a few percent wide, and two of them were flagged against themselves. So the ratio of the
    two own intervals' nearest ends must exceed the limit times the slot's honest ratio: its A/A
    calibration's (``gain``: tasks.calibration.gain_floor, their median ratio times their floor), else
    1.0 times the speedup's ``floor`` on both figures in quadrature (exp(sqrt 2 x its half-width): x1.159
    for an uncalibrated slot's assumed +-11%)."""
    asked = {"batch_asked": timing.batch_asked} if timing.batch_asked else {}
    if timing.batch < 2:
        return asked
    row: dict[str, Any] = {"batch": timing.batch, "graph": timing.graph or None, "per_call_speedup": None, **asked}
    if (check := timing.per_call) is None:
        return row
    est = estimate(
        check.baseline_ms,
        check.kernel_ms,
        check.null_ms,
        check.disturbed or None,
        protocol_dominant=method.protocol_dominant,
    )
    if not (est.lo > 0 and math.isfinite(est.hi)):  # too few pairs give [0, inf] (stats.min_samples)
        unmeasured.append(
            f"{name}: the single calls the batch is held against gave no interval ({est.disturbed} of "
            f"{len(check.kernel_ms)} disturbed on the judge's side, {est.blocks} pairs left): the batch's score "
            "cannot be checked against them (evaluate again)"
        )
        return row
    row["per_call_speedup"] = [est.speedup, est.lo, est.hi]
    limit = method.batch_gain_limit
    if gain is not None:
        noise = gain.corrected * math.exp(gain.half_width)
    else:
        noise = math.exp(math.hypot(floor.half_width, floor.half_width)) if floor is not None else 1.0
    if within[0] > limit * noise * est.hi:
        flags.append(
            f"{name}: in batches the submission's calls measured {within[0]:.4f}x or more, one at a time at most "
            f"{est.hi:.4f}x: calls that run far faster together than apart did work of other calls ahead "
            f"(the batch mode times the sum; limit {limit}x of the per-call figure"
            + (f", x{noise:.3f} more for the noise between requests)" if floor is not None or gain is not None else ")")
        )
    return row
