"""How long the supervisor samples a timed case, and what it keeps of each iteration (pure: no torch).

An iteration is one baseline call, one candidate call and one empty call (or one batch of each), in the
order :func:`order` gives. The supervisor calls :func:`sample` with a function that makes iteration i and
appends its figures to a :class:`Samples`; :func:`sample` decides when to stop:
- after ``min_reps`` iterations not disturbed, as soon as the speedup's interval is within the
  method's ``interval_target`` and its time-ordered halves were compared (2 x stats.MIN_HALF blocks:
  tasks.harness.stats.covering_halves) ("stable"), or once ``budget_s`` has passed ("budget");
- at ``max_reps`` otherwise ("max_reps");
- then, if the speedup cannot be scored yet (its interval wider than ``scorable_ratio`` end to end, or
  too many iterations disturbed: a busy host), on until it can ("noisy, then settled", checked every
  ten iterations) or until ``noisy_budget_s`` more have passed or ``noisy_reps`` x ``max_reps`` iterations
  were made ("noisy").
Sampling stops early only for a precise answer or the time limits; a check that failed ends it
(``failed``). The rules are the report's (tasks.report, tasks.harness.stats): what the supervisor
calls enough is what the report can score.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kcoral.tasks.harness.interference import disturbed
from kcoral.tasks.harness.schema import Sampled, Timing, TimingMethod
from kcoral.tasks.harness.stats import Speedup, estimate, too_disturbed

T = TypeVar("T")


@dataclass
class Samples:
    """A measurement's figures as they are taken, one entry per iteration: raw ms per call of the
    baseline, the candidate and the empty call; the judge's unbilled wait (tasks.harness.interference);
    on a GPU its lowest SM clock, highest temperature and whether it slowed itself at either end of
    the iteration (tasks.harness.gpuclock)."""

    baseline: list[float] = field(default_factory=list)
    candidate: list[float] = field(default_factory=list)
    null: list[float] = field(default_factory=list)
    waits: list[float] = field(default_factory=list)
    mhz: list[float] = field(default_factory=list)
    temp: list[float] = field(default_factory=list)
    throttled: list[bool] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.candidate)

    def clock_ms(self) -> float:
        """The calls' time in all (ms; per call of a batch)."""
        return sum(self.baseline) + sum(self.candidate) + sum(self.null)

    def disturbed(self, cfg: TimingMethod, batch: int = 0) -> list[bool]:
        """Per iteration: whether the judge's side waited too long for it to count, or the GPU slowed
        itself while it ran. ``batch``: the times are per call of batches this long, the waits the
        whole iteration's."""
        shorter = [min(b, c) * max(batch, 1) for b, c in zip(self.baseline, self.candidate, strict=True)]
        slowed = [1.0 if t else 0.0 for t in self.throttled]
        return disturbed(self.waits, shorter, cfg.disturbed_ms, cfg.disturbed_share, slowed)

    def estimate(self, cfg: TimingMethod) -> Speedup:
        """The speedup and its interval so far, as the report will compute them (tasks.report)."""
        marks = self.disturbed(cfg, cfg.batch)
        return estimate(self.baseline, self.candidate, self.null, marks, protocol_dominant=cfg.protocol_dominant)

    def enough(self, cfg: TimingMethod) -> bool:
        """Whether min_reps iterations were not disturbed, and not too many of them all were
        (stats.too_disturbed: the report's rule too)."""
        marks = self.disturbed(cfg, cfg.batch)
        return len(marks) - sum(marks) >= cfg.min_reps and not too_disturbed(marks, cfg.disturbed_limit)

    def scorable(self, cfg: TimingMethod) -> bool:
        """Whether the speedup's interval is narrow enough to be scored (hi / lo at most scorable_ratio),
        from enough iterations that were not disturbed."""
        if not self.enough(cfg):
            return False
        est = self.estimate(cfg)
        return est.lo > 0 and est.hi <= cfg.scorable_ratio * est.lo

    def timing(self, cfg: TimingMethod, batch: int, stopped: str, warmup: int, cooled: float) -> Timing:
        """The supervisor's record of this measurement (CPU figures are added by the caller)."""
        return Timing(**self._figures(cfg, batch, stopped, warmup, cooled))

    def per_call_check(self, cfg: TimingMethod) -> Sampled:
        """The record of a batch's per-call check (``Timing.per_call``): these samples, one call each."""
        return Sampled(**self._figures(cfg, 0, "per-call check", 0, 0.0))

    def _figures(self, cfg: TimingMethod, batch: int, stopped: str, warmup: int, cooled: float) -> dict[str, Any]:
        return dict(
            baseline_ms=self.baseline,
            kernel_ms=self.candidate,
            null_ms=self.null,
            stopped_by=stopped,
            warmup_calls=warmup,
            judge_wait_ms=self.waits,
            disturbed=self.disturbed(cfg, batch),
            sm_clock_mhz=self.mhz,
            temperature_c=self.temp,
            throttled=list(self.throttled),
            cooled_s=cooled,
            batch=batch,
            graph=bool(batch) and cfg.graph,
        )


def order(i: int, baseline: T, candidate: T) -> tuple[T, T]:
    """Who is called first in iteration ``i``: the baseline in even iterations, the candidate in odd
    ones, so that neither is always the one that follows the other's call."""
    return (baseline, candidate) if i % 2 == 0 else (candidate, baseline)


def buffer_set(i: int, sets: int) -> int:
    """Which of a side's ``sets`` buffer sets iteration ``i`` uses: a pair of iterations on each in turn
    (both orders on the same set)."""
    return i // 2 % max(sets, 1)


def stable(estimate: Speedup, cfg: TimingMethod) -> bool:
    """Whether a measurement may stop early: its interval within ``interval_target`` and its halves
    compared (``halves`` set: a change of speed in the middle widens the interval to cover both). A
    shorter one is a few blocks that agree with each other, whatever the start of the timing did to
    them: on an H100 (kda/forward_b1_t8192_h96, 26 A/A requests, 2026-12-06), the 11 stopped after
    6-9 blocks missed 1.0 by 0.37% rms and their intervals held it 5 times; the 15 of 10 or more
    blocks, 0.17% rms and 13 times (bench/results/issue29-h100-2026-12-06)."""
    return estimate.halves is not None and estimate.relative_half_width <= cfg.interval_target


def sample(
    iteration: Callable[[int], None],
    samples: Samples,
    cfg: TimingMethod,
    failed: Callable[[], bool] = lambda: False,
    clock: Callable[[], float] = time.monotonic,
    undecided: Callable[[], bool] = lambda: False,
) -> str:
    """Make iterations (``iteration(i)`` appends iteration i's figures to ``samples``) until the method
    says stop; return why it stopped (Timing.stopped_by). ``undecided``: the host's figures do not yet
    say whether the times can be scored (others' work on the candidate's core over its share, in too few
    ms to stand): no early stop then, the measurement runs to max_reps or its budget."""
    deadline = clock() + cfg.budget_s
    stopped = "max_reps"
    for i in range(cfg.max_reps):
        iteration(i)
        if i + 1 >= cfg.min_reps and samples.enough(cfg):
            if stable(samples.estimate(cfg), cfg) and not undecided():
                return "stable"
            if clock() > deadline:
                stopped = "budget"
                break
    if failed() or samples.scorable(cfg):
        return stopped
    # A busy host: the speedup cannot be given this precisely yet. Sample on (the interval narrows with
    # more samples) until it can, or until noisy_budget_s more have passed.
    limit = clock() + cfg.noisy_budget_s
    i = len(samples)
    while i < cfg.noisy_reps * cfg.max_reps and clock() < limit and not failed():
        iteration(i)
        i += 1
        if i % 10 == 0 and samples.scorable(cfg):
            return "noisy, then settled"
    return "noisy"
