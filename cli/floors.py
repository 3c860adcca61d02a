"""A slot's noise floor in words, as ``kcoral calibrate`` and ``kcoral doctor`` show it (its own module:
the commands that show none do not load tasks.calibration at start-up)."""

from __future__ import annotations

import math
from typing import Any

from kcoral.cli.render import fmt_duration
from kcoral.tasks.calibration import GAIN_SUFFIX, ONE_WINDOW_S, span_s


def floor_words(workload: str, floor: dict[str, Any]) -> str:
    """One workload's floor as ``kcoral calibrate`` and ``kcoral doctor`` show it (``floor``: a
    tasks.calibration.NoiseFloor document, as /v1/health gives it): a speedup's position cost and floor,
    or a batch-gain ratio's honest value and floor, with the time its requests span."""
    seconds = span_s(floor)
    span = ""
    if seconds is not None:
        span = f" over {fmt_duration(seconds)}"
        if seconds < ONE_WINDOW_S:
            span += ", one window of the host's time: calibrate again minutes apart"
    half = _figure(floor, "half_width")
    share = math.expm1(half) if half < 700 else math.inf  # past ~709 expm1 overflows; a floor that wide is none
    count = _figure(floor, "requests")
    width = (
        f"spread {_figure(floor, 'spread'):.4f}, floor +-{share:.2%} "
        f"({int(count) if math.isfinite(count) else '?'} requests{span})"
    )
    if workload.endswith(GAIN_SUFFIX):
        return f"{workload}: {_figure(floor, 'corrected'):.4f}x in an honest request, {width}"
    return f"{workload}: position cost {_figure(floor, 'position_ms'):+.4f} ms per call, {width}"


def _figure(floor: dict[str, Any], key: str) -> float:
    """A floor document's number (a NaN where the server sent none, or something else: shown as nan)."""
    value = floor.get(key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else math.nan
