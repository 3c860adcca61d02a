"""Cheating candidates against the real evaluation (threat model attacks 2-4, 13-15, 19-25; issue 8's
nine classes; issue 29's storms).

Each candidate under candidates/<name>/ is one attack on demo/softmax, evaluated end to end: real
server, real containers (the supervisor and the candidate's worker). Each attack has the outcome it
must get, with its own reason: the holdout fails with the named kind, a named workload fails with
the named reason, the evaluation is flagged for the named cause, or the attack is neutralised: the
evaluation passes with no better speedup than an honest run (and, where the attack prints what it
managed, it managed nothing).

One at a time (the serial lane of scripts/test.sh), even the attacks a check catches: beside another
file, an evaluation that reaches its timing samples on as on a busy host and one that fails at its
holdout takes 2-3 times as long (tried twice: the lane's time grew by more than the serial lane's
shrank, stop 52: 232 -> 347 s against 92 s saved).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kcoral.runner.codecopy import PACKAGES, package_folder
from tests.attacks.judging import (
    HONEST_LIMIT,
    assert_honest,
    describe,
    evaluate,
    evaluate_scored,
    failed_evaluation,
    no_score,
    speedup,
)
from tests.conftest import RunningServer, mounted_tmpfs, quick_tasks

#: the holdout fails, with this kind of failure, or one of these (its details stay secret)
HOLDOUT: dict[str, str | tuple[str, ...]] = {
    "exit_in_setup": "ERROR",  # os._exit in setup(): the worker is gone
    "exit_in_first_call": "ERROR",  # os._exit in the untimed first call, before any case
    "fake_report_lines": "FAIL",  # zeros written, a passing report printed
    "lazy_no_write": "FAIL",  # the output buffer is never written (NaN-poisoned)
    "persistent_worker": "FAIL",  # half the rows finished by a thread after the call returned
    "rebind_output": "ERROR",  # data['y'] rebound: the worker names the mistake
    "skip_every_other": "FAIL",
    "standard_only": "FAIL",  # phase detection: wrong off the standard distribution
    # its thread writes while the supervisor reads the outputs: elements that change after the answer
    # (the call's error) or elements never written by the copy (wrong values), whichever it meets first
    "thread_early_return": ("ERROR", "FAIL"),
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
#: flagged (the evaluation fails) for work outside the candidate's own calls
FLAGGED = {
    "interfere_with_baseline": "used CPU",  # classes 2 and 8: load while the baseline runs
    "precompute_on_write": "used CPU",  # class 4: work as the inputs are written
}
#: flagged attacks whose early work can race the writing of their inputs and then fail a check instead
RACING = {"precompute_on_write"}
#: neutralised: passes like an honest run, and the attack's own report line (if any) says it failed
NEUTRALISED = {
    "honest": None,
    "atexit_forge": None,  # no results file exists, and atexit never runs
    "atexit_forge_below_floor": None,
    "fake_results_in_setup": "FORGE-WROTE",  # no folder the server reads is writable
    "gc_forge_results": None,  # class 1/19: the heap holds no measurement
    "patch_clock": None,  # this process's clocks time nothing
    "patch_timing_global": None,  # claims added to the answers are ignored
    "slow_baseline": None,  # class 2: the baseline runs in another process
    "zero_inputs": None,  # inputs are rewritten before every call
    "plant_links": "LINK-PLANTED",  # class 7: nowhere to plant a link the server reads
}
#: neutralised whatever the timing's length (the forgery, the patched clock or the link finds nothing to
#: act on: sampling longer shows no more), so evaluated on ``quick_server``: ten timed iterations, not
#: up to forty (~3 s less each on a quiet 2-core host). The honest run (the reference for HONEST_LIMIT),
#: slow_baseline (aimed at the baseline's timing) and zero_inputs keep the task's own timing
QUICK_NEUTRALISED = {
    "atexit_forge",
    "atexit_forge_below_floor",
    "fake_results_in_setup",
    "gc_forge_results",
    "patch_clock",
    "patch_timing_global",
    "plant_links",
}


@pytest.mark.parametrize("name", sorted(FLAGGED))
def test_attack_is_flagged(quick_server: RunningServer, name: str) -> None:
    """Timed briefly: a flag for CPU outside the calls stands on any measurement's length, and an
    attack that burns CPU throughout made the task's own timing take ~30 s on a 2-core host."""
    job, report, _ = evaluate(quick_server, name)
    assert failed_evaluation(job), describe(job, report)
    if name in RACING and not report["flags"]:
        # its early work raced the supervisor writing the inputs and answered from half of them: its
        # checks failed before anything was timed (a non-gain too; the flag is what it gets otherwise)
        assert report["holdout"] == "FAIL" or any(w["verdict"] != "PASS" for w in report["workloads"]), describe(
            job, report
        )
        return
    assert any(FLAGGED[name] in f for f in report["flags"]), describe(job, report)


@pytest.mark.parametrize("name", sorted(NEUTRALISED))
def test_attack_is_neutralised(request: pytest.FixtureRequest, name: str) -> None:
    server = request.getfixturevalue("quick_server" if name in QUICK_NEUTRALISED else "server")
    job, report, log = evaluate_scored(server, name)
    assert_honest(job, report)
    marker = NEUTRALISED[name]
    if marker:
        assert marker not in log, log[-3000:]
    floor = 0.4  # demo/softmax's physical floor, ms
    assert all(w.get("kernel_ms", floor) >= floor for w in report["workloads"]), describe(job, report)


#: issue 29: work the kernel bills to nobody (interrupt storms, timer signals) armed by the candidate, and
#: the line its log shows once armed: it must gain nothing (its cores are its own), and the judge's CPU
#: counter it would aim by must be out of its sight
STORMS = {"irq_storm": "STORM-ENTRIES", "timer_signals": "SIGNALS-ARMED", "iouring_storm": "IOURING-"}


@pytest.mark.parametrize("name", sorted(STORMS))
def test_interference_billed_to_nobody_gains_nothing(server: RunningServer, name: str) -> None:
    job, report, log = evaluate(server, name)
    assert STORMS[name] in log, log[-3000:]
    assert "STORM-AIMED" not in log, "the candidate could watch the counter the judge reads"
    s = speedup(report)
    assert no_score(job) or (s is not None and s < HONEST_LIMIT), describe(job, report)


def test_a_flag_from_one_measurement_is_measured_again_before_it_stands(server: RunningServer) -> None:
    """Issue 11 (no false flags): CPU burnt between calls for a while only, as a busy host's noise would
    look: the first measurement is flagged, the second is clear, and the evaluation passes."""
    job, report, log = evaluate_scored(server, "transient_cpu")
    assert_honest(job, report)
    standard = next(w for w in report["workloads"] if w["id"] == "standard")
    assert standard["stopped_by"].endswith(", measured twice"), describe(job, report)


def test_work_before_the_call_unseen_by_the_counter_as_the_inputs_are_written_gains_nothing(
    server: RunningServer,
) -> None:
    """Class 4 unseen by the container's CPU counter while the inputs are written (it moves only at the
    scheduler's ticks and switches): a forked helper starts just after a tick, follows the writer and
    spins until the call (a red-team pass: 1.07-1.15x, unflagged). Its work is counted at the switch that
    lets the call's worker run, as CPU beyond the call's own time (tasks.harness.callwatch): early work.
    Whether it is flagged depends on how much it did; it never scores a gain."""
    job, report, _ = evaluate(server, "precompute_from_a_helper")
    summary = report.get("summary") or {}
    assert no_score(job) or summary.get("speedup_lo", 0.0) <= 1.0, describe(job, report)


def test_a_worker_stopped_in_a_call_is_given_up_in_time_as_the_candidates_error(quick_server: RunningServer) -> None:
    """A kill at the wrong moment: the candidate's worker stops itself (SIGSTOP) in a call, holding its answer.
    It is given up at the evaluation's deadline less its margin (not after the call's own 300 s, past the
    job's limit: no report), its cases are its errors, and the report says why. Never the judge's failure:
    once the trusted workers' waits were cut to the deadline too, and the clean-up's question to the empty
    call's worker then failed at once (infrastructure_error, exit 125)."""
    job, report, log = evaluate(quick_server, "stop_in_a_call", timeout_s=30)
    assert "STOPPING" in log, log[-3000:]
    assert failed_evaluation(job), describe(job, report)
    reasons = " ".join(str(w.get("reason", "")) for w in report["workloads"])
    assert "the candidate's worker stopped answering" in reasons, describe(job, report)
    assert "what was left of the evaluation's time limit" in reasons, describe(job, report)


def test_early_answer_buys_nothing(server: RunningServer) -> None:
    """Answering "ok" before the work: the outputs are copied at the answer, so either the copy sees
    unfinished outputs (a failure) or the work was already done (no gain)."""
    job, report, _ = evaluate(server, "patch_timer")
    s = speedup(report)
    assert no_score(job) or (s is not None and s < HONEST_LIMIT), describe(job, report)


def test_secrets_are_not_readable(server_factory: Callable[..., RunningServer], tmp_path: Path) -> None:
    """Attack 2: the candidate searches the filesystem, env and the supervisor's /proc entries."""
    with mounted_tmpfs(tmp_path / "own", 4096) as own:  # the data dir as a filesystem of its own
        server = server_factory(data_dir=own / "data", tasks_dirs=(quick_tasks(tmp_path / "tasks"),))
        job, report, log = evaluate_scored(server, "read_secrets")
    assert "SECRET-SCAN-DONE" in log, log[-3000:]
    found = [line for line in log.splitlines() if line.startswith("SECRET-FOUND")]
    assert not found, found
    # The candidate sees no process of the judge's (a PID namespace of its own: issue 29, watching the
    # measurer through /proc/PID/schedstat); its mount table shows no host path: every folder it
    # mounts comes from inside the data dir (kcoral's code from its copy there)
    assert "FOREIGN-PROCESS" not in log, [line for line in log.splitlines() if "FOREIGN-PROCESS" in line]
    roots = {tuple(line.split()[2:4]) for line in log.splitlines() if line.startswith("MOUNT-ROOT ")}
    by_target = dict((target, root) for root, target in roots)
    assert by_target["/job/input"] == f"/data/jobs/{job['id']}/input", roots
    assert by_target["/kcoral/kcoral/tasks/harness"].startswith("/data/code/"), roots
    assert "/judge-in" not in by_target, "the supervisor's mount table was seen"
    host = (str(tmp_path), *(str(package_folder(p)) for p in PACKAGES), str(Path.home()))
    assert not [r for r in roots if r[0].startswith(host)], roots
    # the supervisor's processes are not in the candidate's PID namespace: not even their command lines
    assert "kcoral.tasks.harness.supervise" not in log and "SECRET-SCAN /proc/1/cmdline" in log, log[-3000:]
    assert_honest(job, report)


def test_shadow_modules_are_never_imported(quick_server: RunningServer) -> None:
    """Attack 3: torch.py / numpy.py / statistics.py in the submission directory (the task timed briefly:
    what is asserted is what was imported, and an honest result)."""
    job, report, log = evaluate_scored(quick_server, "shadow_modules")
    assert "SHADOW-LOADED" not in log, log[-3000:]
    assert_honest(job, report)


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
    kinds = HOLDOUT[name] if isinstance(HOLDOUT[name], tuple) else (HOLDOUT[name],)
    assert report["holdout"] == "FAIL" and report["holdout_failure"] in kinds, describe(job, report)


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


def test_an_answer_from_inside_the_call_is_seen_by_the_copy(server: RunningServer) -> None:
    """Issue 29: the callable answers "ok" itself with its last rows left to a thread, which finishes them
    while the supervisor copies the outputs (and drops the worker's own answer). Copied in the order
    the rows are written, the copy never caught the thread up, and the last rows were never on the
    clock (1.039x once). The copy's order is the supervisor's secret: it reaches an unwritten row."""
    job, report, log = evaluate(server, "answer_inside_the_call")
    assert "ANSWERED-EARLY" in log, log[-3000:]
    assert failed_evaluation(job), describe(job, report)
