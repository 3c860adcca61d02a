"""What the attack tests share (tests/attacks/test_attacks.py and the other files that evaluate a
candidate of candidates/): how a candidate is evaluated on a running server, and how its outcome is
read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import RunningServer, make_tar
from tests.scored import pair_unscored, until_scored

CANDIDATES = Path(__file__).resolve().parent / "candidates"
TASK = "demo/softmax"
#: The honest candidate makes the baseline's own call, so its speedup is ~1x (seen 0.82-1.20x on this
#: 2-core host with the supervisor's clock); a run above this has gained from its attack.
HONEST_LIMIT = 1.6


def evaluate(server: RunningServer, name: str, timeout_s: float = 300) -> tuple[dict[str, Any], dict[str, Any], str]:
    """Evaluate candidates/<name> within ``timeout_s``; return (job, report, log)."""
    folder = CANDIDATES / name
    files: dict[str, str | bytes] = {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }
    r = server.http.post("/v1/jobs", json={"kind": "eval", "task": TASK, "timeout_s": timeout_s})
    assert r.status_code == 201, r.text
    job_id = r.json()["id"]
    r = server.http.put(f"/v1/jobs/{job_id}/input", content=make_tar(files))
    assert r.status_code == 200, r.text
    job = server.wait(job_id, timeout=400)
    log = server.log(job_id)
    r = server.http.get(f"/v1/jobs/{job_id}/outputs/report.json")
    assert r.status_code == 200, f"no report for {name}: job {job} log tail {log[-3000:]}"
    return job, r.json(), log


def evaluate_scored(server: RunningServer, name: str) -> tuple[dict[str, Any], dict[str, Any], str]:
    """:func:`evaluate`, again while the host leaves it unscored (tests.scored): for a candidate whose
    score is read (:func:`assert_honest`)."""
    return until_scored(lambda: evaluate(server, name), pair_unscored)


def speedup(report: dict[str, Any]) -> float | None:
    return (report.get("summary") or {}).get("speedup")


def describe(job: dict[str, Any], report: dict[str, Any]) -> str:
    return f"verdict={job['verdict']} exit={job['exit_code']} lines:\n" + "\n".join(report.get("lines", []))


def failed_evaluation(job: dict[str, Any]) -> bool:
    return job["verdict"] == "rejected" and job["exit_code"] is None


def no_score(job: dict[str, Any]) -> bool:
    """Failed, or inconclusive (every check passed, the timing could not be trusted): either way no
    score, so nothing gained."""
    return failed_evaluation(job) or (job["verdict"] == "inconclusive" and job["exit_code"] is None)


def assert_honest(job: dict[str, Any], report: dict[str, Any]) -> None:
    assert job["verdict"] == "ok" and not report["flags"], describe(job, report)
    s = speedup(report)
    assert s is not None and 0.5 < s < HONEST_LIMIT, describe(job, report)
