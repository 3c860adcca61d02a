"""Cheating candidates against the real evaluation (threat model attacks 2, 3, 4, 13, 14, 15).

Each candidate under candidates/<name>/ is one attack on demo/softmax, evaluated end to end: real
server, real containers (judge-prepare, candidate, judge-check). An attack must be *caught*: the
job ends with verdict "exit" and exit code 1 because the holdout failed, a workload is not PASS, or
the report is flagged. Attacks the harness neutralises outright (the secret is not there, the
shadow module is never imported, the forged file is overwritten) are checked on what they saw or
on the report instead, and must never earn a better speedup than an honest run.

An attack found that is neither caught nor neutralised goes in as a strict xfail naming the hole, so
that closing the hole turns it red until the marker is removed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RunningServer, make_tar

CANDIDATES = Path(__file__).resolve().parent / "candidates"
TASK = "demo/softmax"
#: The honest candidate makes the baseline's own call, so its speedup is ~1x; a passing run above
#: this has gained from its attack. Generous: on a loaded 2-core host honest runs measured 0.5x-1.8x.
HONEST_LIMIT = 2.5
#: The baseline-drift flag compares timings taken in two containers at two moments; on a loaded host
#: it fires on honest runs too (seen at -45%), so it does not count as catching an attack, except
#: in the test of the attack it exists for (slow_baseline).
DRIFT = "in the candidate's process but"


def evaluate(server: RunningServer, name: str) -> tuple[dict[str, Any], dict[str, Any], str]:
    """Evaluate candidates/<name>; return (job, report, log)."""
    folder = CANDIDATES / name
    files: dict[str, str | bytes] = {str(p.relative_to(folder)): p.read_bytes()
                                     for p in sorted(folder.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}
    r = server.http.post("/v1/jobs", json={"kind": "eval", "task": TASK, "timeout_s": 300})
    assert r.status_code == 201, r.text
    job_id = r.json()["id"]
    r = server.http.put(f"/v1/jobs/{job_id}/input", content=make_tar(files))
    assert r.status_code == 200, r.text
    job = server.wait(job_id, timeout=400)
    log = server.log(job_id)
    r = server.http.get(f"/v1/jobs/{job_id}/outputs/report.json")
    assert r.status_code == 200, f"no report for {name}: job {job} log tail {log[-3000:]}"
    return job, r.json(), log


def failed(report: dict[str, Any]) -> bool:
    return report["holdout"] != "PASS" or any(w["verdict"] != "PASS" for w in report["workloads"])


def firm_flags(report: dict[str, Any]) -> list[str]:
    """Flags other than baseline drift (which host noise alone can raise)."""
    return [f for f in report["flags"] if DRIFT not in f]


def caught(job: dict[str, Any], report: dict[str, Any]) -> bool:
    return job["verdict"] == "exit" and job["exit_code"] == 1 and (failed(report) or bool(firm_flags(report)))


def speedup(report: dict[str, Any]) -> float | None:
    return (report.get("summary") or {}).get("speedup")


def gained(job: dict[str, Any], report: dict[str, Any]) -> bool:
    """Passed with a better speedup than an honest run gets."""
    s = speedup(report)
    return not caught(job, report) and s is not None and s > HONEST_LIMIT


def describe(job: dict[str, Any], report: dict[str, Any]) -> str:
    return f"verdict={job['verdict']} exit={job['exit_code']} lines:\n" + "\n".join(report.get("lines", []))


def not_caught(why: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(strict=True, reason=f"not caught yet: {why}")


CAUGHT = [
    # 3: tampering with the harness's clocks, timer and comparator by rebinding names
    "patch_clock", "patch_timer", "patch_compare",
    # 4: forged lines, early exits
    "fake_report_lines", "exit_in_setup", "exit_in_timed_call",
    # 13: timing hacks
    "thread_early_return", "replay_by_ptr", "skip_every_other", "lazy_no_write", "rebind_output",
    "zero_inputs", "warmup_detect",
    # 14: phase detection
    "standard_only",
]

# Tricks that now fail or get flagged: swapped code objects, the timing module's own clock
# reference, results forged through gc, a background worker finishing calls late.
CAUGHT += ["patch_compare_code", "patch_timing_global", "gc_forge_results", "persistent_worker"]

# 4: atexit handlers that rewrite results.json never run: the harness leaves with os._exit right
# after writing its claims, so the forgery does not happen and the score is the honest one.
NEUTRALISED = ["atexit_forge", "atexit_forge_below_floor"]


@pytest.mark.parametrize("name", CAUGHT)
def test_attack_is_caught(server: RunningServer, name: str) -> None:
    job, report, log = evaluate(server, name)
    assert caught(job, report), f"{name} was not caught: {describe(job, report)}"
    assert not gained(job, report)


@pytest.mark.parametrize("name", NEUTRALISED)
def test_attack_is_neutralised(server: RunningServer, name: str) -> None:
    """The forgery never takes effect: no better speedup than an honest run, no claim below the floor."""
    job, report, _ = evaluate(server, name)
    assert not gained(job, report), describe(job, report)
    floor = 0.4  # demo/softmax's physical floor, ms
    for row in report.get("workloads", []):
        assert row.get("kernel_ms", floor) >= floor, describe(job, report)


def test_honest_reference_passes_near_1x(server: RunningServer) -> None:
    """The yardstick: an honest run passes (drift aside) with a speedup under HONEST_LIMIT."""
    job, report, _ = evaluate(server, "honest")
    assert not caught(job, report), describe(job, report)
    s = speedup(report)
    assert s is not None and 0.5 < s < HONEST_LIMIT, describe(job, report)


def test_slowed_baseline_is_flagged_as_drift(server: RunningServer) -> None:
    """Attack 3: torch.softmax (the baseline's call) patched to run twice in the candidate's process."""
    job, report, _ = evaluate(server, "slow_baseline")
    assert job["verdict"] == "exit" and job["exit_code"] == 1, describe(job, report)
    assert any(DRIFT in f and "(+" in f for f in report["flags"]), describe(job, report)


def test_forged_report_lines_are_not_the_last_word(server: RunningServer) -> None:
    job, report, log = evaluate(server, "fake_report_lines")
    assert caught(job, report) and report["holdout"] == "FAIL"
    verdict_lines = [line for line in log.splitlines() if line.startswith("holdout correctness:")]
    assert verdict_lines[-1] == "holdout correctness: FAIL", verdict_lines


def test_secrets_are_not_readable(server: RunningServer) -> None:
    """Attack 2: the candidate searches the filesystem, env and /proc; it must find nothing secret."""
    job, report, log = evaluate(server, "read_secrets")
    assert "SECRET-SCAN-DONE" in log, log[-3000:]
    found = [line for line in log.splitlines() if line.startswith("SECRET-FOUND")]
    assert not found, found
    assert not gained(job, report)


def test_shadow_modules_are_never_imported(server: RunningServer) -> None:
    """Attack 3: torch.py / numpy.py / statistics.py in the submission directory."""
    job, report, log = evaluate(server, "shadow_modules")
    assert "SHADOW-LOADED" not in log, log[-3000:]
    assert not caught(job, report), describe(job, report)  # the solution itself is honest
    assert not gained(job, report)


def test_results_json_forged_in_setup_is_overwritten(server: RunningServer) -> None:
    """Attack 4: a results.json written into $KCORAL_OUTPUT_DIR before the harness writes its own."""
    job, report, _ = evaluate(server, "fake_results_in_setup")
    timed = [w for w in report["workloads"] if "kernel_ms" in w]
    assert timed and all(abs(w["kernel_ms"] - 0.123456) > 1e-6 for w in timed), describe(job, report)
    assert not gained(job, report), describe(job, report)


def test_nothing_is_cached_across_evaluations(server: RunningServer) -> None:
    """Attack 15: the second evaluation must not see the files the first one left."""
    _, _, first = evaluate(server, "cache_across_runs")
    assert "CACHE-WROTE" in first, first[-3000:]
    _, _, second = evaluate(server, "cache_across_runs")
    assert "CACHE-WROTE" in second
    hits = [line for line in second.splitlines() if line.startswith("CACHE-HIT")]
    assert not hits, hits
