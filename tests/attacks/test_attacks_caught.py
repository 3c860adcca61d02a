"""Cheating candidates a check catches (threat model attacks 13-15, 19-25; issue 8's classes 1, 3, 5,
6, 9): the holdout fails with the named kind, or a named workload fails with the named reason (a timed
sample's outputs checked, or a later workload's); or, for attack 15, what the second evaluation finds.
What is asserted never depends on the timing's precision or the host's load, so this file runs in the
concurrent lane (scripts/test.sh); test_attacks.py has the attacks that need a quiet host.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.attacks.judging import describe, evaluate, failed_evaluation
from tests.conftest import RunningServer

#: every evaluation here fails a check, or only what the candidate printed is asserted (scripts/test.sh)
pytestmark = pytest.mark.concurrent

#: the holdout fails, with this kind of failure (its details stay secret)
HOLDOUT = {
    "exit_in_setup": "ERROR",  # os._exit in setup(): the worker is gone
    "exit_in_first_call": "ERROR",  # os._exit in the untimed first call, before any case
    "fake_report_lines": "FAIL",  # zeros written, a passing report printed
    "lazy_no_write": "FAIL",  # the output buffer is never written (NaN-poisoned)
    "persistent_worker": "FAIL",  # half the rows finished by a thread after the call returned
    "rebind_output": "ERROR",  # data['y'] rebound: the worker names the mistake
    "skip_every_other": "FAIL",
    "standard_only": "FAIL",  # phase detection: wrong off the standard distribution
    "thread_early_return": "FAIL",
    "malformed_answers": "ERROR",  # issue 8 class 9: a malformed answer is the candidate's ERROR
}
#: the holdout passes, and this workload gets this verdict with this reason
WORKLOAD = {
    "exit_in_timed_call": ("standard", "ERROR", "stopped answering"),
    "patch_compare": ("standard", "FLAKY", "timed sample"),
    "patch_compare_code": ("standard", "FLAKY", "timed sample"),
    "replay_by_ptr": ("standard", "FLAKY", "timed sample"),
    "warmup_detect": ("standard", "FLAKY", "timed sample"),
    "skip_timed_batch": ("standard", "FLAKY", "timed sample"),  # issue 8 class 1
    "partial_rows": ("standard", "FLAKY", "timed sample"),  # class 3
    "predict_samples": ("standard", "FLAKY", "timed sample"),  # class 5
    "rewrite_old_outputs": ("one_column", "FAIL", "non-finite"),  # class 6
}
#: may fail the holdout before its workload: its replay is keyed on buffer addresses, and the buffers of
#: the candidate's first call (decoy inputs, before any case) are freed before the first probe's, which
#: may be mapped at the same address: it then replays the first call's outputs there
MAY_FAIL_THE_HOLDOUT = {"replay_by_ptr"}


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
def test_attack_fails_its_workload(quick_server: RunningServer, name: str) -> None:
    """Each is caught by a check (of a timed sample's outputs, or of a later workload), not by how precise
    the timing is: on ``quick_server`` (ten timed iterations; ~1 s less each than the task's own timing)."""
    workload, verdict, reason = WORKLOAD[name]
    job, report, _ = evaluate(quick_server, name)
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


def test_nothing_is_cached_across_evaluations(quick_server: RunningServer) -> None:
    """Attack 15: the second evaluation must not see the files the first one left (the task timed
    briefly: only what the candidate printed is asserted)."""
    _, _, first = evaluate(quick_server, "cache_across_runs")
    assert "CACHE-WROTE" in first, first[-3000:]
    _, _, second = evaluate(quick_server, "cache_across_runs")
    assert "CACHE-WROTE" in second
    hits = [line for line in second.splitlines() if line.startswith("CACHE-HIT")]
    assert not hits, hits
