"""runner.executor.settle_breach: a deadline kill turns into output_limit when the stored log was over the cap."""

from __future__ import annotations

from kcoral.protocol.models import Verdict
from kcoral.runner.member import settle_breach


def test_timeout_with_an_overflowing_stored_log_is_an_output_limit() -> None:
    timeout = (Verdict.timeout, "the job ran past its timeout and was killed")
    verdict, reason = settle_breach(timeout, True, 1024)
    assert verdict is Verdict.output_limit and "more than 1024 bytes" in reason


def test_other_outcomes_are_kept() -> None:
    timeout = (Verdict.timeout, "t")
    assert settle_breach(timeout, False, 1024) == timeout
    cancelled = (Verdict.cancelled, "c")
    assert settle_breach(cancelled, True, 1024) == cancelled
    assert settle_breach(None, False, 1024) is None


def test_a_job_that_ended_after_overflowing_broke_the_limit() -> None:
    verdict, _ = settle_breach(None, True, 1024)
    assert verdict is Verdict.output_limit
