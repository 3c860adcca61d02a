"""The attacks whose outcome is a failed check (test_attacks.py has the rest, and the candidates): the
holdout fails with the named kind, or a named workload fails with the named reason. Nothing timed is
asserted, so this file may run beside another (scripts/test.sh); its evaluations' timing, where there is
any, decides nothing here."""

from __future__ import annotations

from typing import Any

import pytest

from tests.attacks.test_attacks import (
    HOLDOUT,
    MAY_FAIL_THE_HOLDOUT,
    WORKLOAD,
    describe,
    evaluate,
    failed_evaluation,
)
from tests.conftest import RunningServer

pytestmark = pytest.mark.concurrent


#: evaluations that more than one test reads (test_forged_report_lines_are_not_the_last_word reads the
#: holdout test's evaluation of fake_report_lines): made once, by whichever test asks first
_shared: dict[str, tuple[dict[str, Any], dict[str, Any], str]] = {}


def evaluate_shared(server: RunningServer, name: str) -> tuple[dict[str, Any], dict[str, Any], str]:
    if name not in _shared:
        _shared[name] = evaluate(server, name)
    return _shared[name]


@pytest.mark.parametrize("name", sorted(HOLDOUT))
def test_attack_fails_the_holdout(server: RunningServer, name: str) -> None:
    job, report, _ = evaluate_shared(server, name)
    assert failed_evaluation(job), describe(job, report)
    assert report["holdout"] == "FAIL" and report["holdout_failure"] == HOLDOUT[name], describe(job, report)


@pytest.mark.parametrize("name", sorted(WORKLOAD))
def test_attack_fails_its_workload(server: RunningServer, name: str) -> None:
    workload, verdict, reason = WORKLOAD[name]
    job, report, _ = evaluate(server, name)
    assert failed_evaluation(job), describe(job, report)
    if name in MAY_FAIL_THE_HOLDOUT and report["holdout"] == "FAIL":
        assert report["holdout_failure"] == "FAIL", describe(job, report)
        return
    assert report["holdout"] == "PASS", describe(job, report)
    row = next(w for w in report["workloads"] if w["id"] == workload)
    assert row["verdict"] == verdict and reason in row["reason"], describe(job, report)


def test_forged_report_lines_are_not_the_last_word(server: RunningServer) -> None:
    job, report, log = evaluate_shared(server, "fake_report_lines")
    assert failed_evaluation(job) and report["holdout"] == "FAIL"
    verdict_lines = [line for line in log.splitlines() if line.startswith("holdout correctness:")]
    assert verdict_lines[-1].startswith("holdout correctness: FAIL ("), verdict_lines
