"""The rule that ends a measurement early when the submission's calls cannot be timed before the
evaluation's deadline (tasks.harness.measure.Measuring._within_the_limit), on figures of our own. The
end-to-end case (a 1.5 s call, a 25 s limit: tests/integration/test_eval_cli.py) is nightly; this keeps
the rule in every CI run. Needs torch (the module imports it); skipped when torch is missing
(tests/tasks/test_torch_tests_in_image.py runs it in the job image)."""

from __future__ import annotations

import re
import time

import pytest

pytest.importorskip("torch")

from kcoral.tasks.harness.measure import Measuring, TooSlow  # noqa: E402
from kcoral.tasks.harness.schema import TimingMethod  # noqa: E402


def _measuring(left_s: float) -> Measuring:
    """A measurement's rule with ``left_s`` seconds to the deadline beyond the method's margin."""
    m = Measuring.__new__(Measuring)
    m.cfg = TimingMethod()
    m.deadline = time.time() + m.cfg.deadline_margin_s + left_s if left_s else 0.0
    return m


def test_calls_that_cannot_end_before_the_deadline_end_the_measurement_with_the_reason() -> None:
    # 11 more iterations of 1.7 s (a 1.5 s call) need 18.7 s: 10 s left is too few
    with pytest.raises(TooSlow) as caught:
        _measuring(10.0)._within_the_limit(0.02, 1500.0, 1.7, 11, 0)
    assert re.fullmatch(
        r"too slow: one call takes 1\.5 s \(the baseline's 2e-05 s\); the (9|10) s left of the evaluation's time "
        r"limit allow 0\.7\d* s per call for the 11 iterations its measurement still needs",
        str(caught.value),
    ), str(caught.value)
    # in batches of 8: the allowance is per call of the batch
    with pytest.raises(TooSlow, match=r"allow 0\.10\d* s per call"):
        _measuring(10.0)._within_the_limit(20.0, 200.0, 1.7, 11, 8)


@pytest.mark.parametrize(
    ("left_s", "base_ms", "cand_ms"),
    [
        pytest.param(30.0, 0.02, 1500.0, id="time enough: 18.7 s needed of 30 s left"),
        pytest.param(10.0, 1500.0, 1500.0, id="no slower than the baseline (the task's own pace)"),
        pytest.param(0.0, 0.02, 1500.0, id="no deadline"),
    ],
)
def test_no_early_end_without_cause(left_s: float, base_ms: float, cand_ms: float) -> None:
    _measuring(left_s)._within_the_limit(base_ms, cand_ms, 1.7, 11, 0)  # raises nothing: the test fails if it does
