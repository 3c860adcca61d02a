"""``kcoral eval``, ``tasks``, ``show`` and ``rerun`` end to end against a real server and real containers.

Commands run in-process through ``cli.main.run`` with ``KCORAL_REMOTE`` pointing at the test server; what
they print is read with capfd. An evaluation takes ~10 s on a small CPU host, so the file runs few: the
good candidate through ``kcoral eval`` (shared by show and rerun), two wrong candidates, one rerun, and
the deadlines' and the cancel's.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import time
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any

import docker
import pytest

from kcoral.cli.main import run
from kcoral.runner.wakeqos import PATH as WAKE_QOS
from kcoral.runner.wakeqos import unheeded
from kcoral.tasks.harness.schema import TimingMethod
from tests.conftest import RunningServer, make_tar, quick_tasks, server_settings, serving
from tests.scored import cli_unscored, job_unscored, until_scored

REPO = Path(__file__).resolve().parents[2]
GOOD = REPO / "tests" / "eval_candidates" / "softmax_good"
TASK = "demo/softmax"
WORKLOADS = ["standard", "large_magnitude", "neg_inf", "one_column", "wide", "tiny_values", "shifted"]
EVAL_TIMEOUT_S = 300

# Correct whenever cols is a multiple of the 16-column tile (the holdout's and every timed shape), but the
# tail columns are never exponentiated: with cols=1 the whole row is tail, y = 0/0 = NaN.
TAIL_BUG = '''\
"""Softmax in 16-column tiles; the tail (cols % 16) is forgotten."""

import torch

TILE = 16


def setup(data):
    x, y = data["x"], data["y"]
    body = x.shape[-1] - x.shape[-1] % TILE
    tiles = y[:, :body]

    def run():
        torch.sub(x, x.amax(dim=-1, keepdim=True), out=y)
        tiles.exp_()
        y.div_(y.sum(dim=-1, keepdim=True))

    return run
'''

# No max-subtraction: exp overflows to inf for large magnitudes (workload large_magnitude, scale 1000).
NAIVE = """\
import torch


def setup(data):
    x, y = data["x"], data["y"]

    def run():
        torch.exp(x, out=y)
        y.div_(y.sum(dim=-1, keepdim=True))

    return run
"""


# ---- fixtures ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, docker_client: docker.DockerClient, job_image: str
) -> Iterator[RunningServer]:
    """One server for the whole file (show and rerun work on a job evaluated once); tests.conftest's
    ``remote`` points the CLI at it. Its demo/softmax is timed briefly (tests.conftest.quick_tasks; the
    holdout's four probes kept, as the task lists them): what is checked is what the CLI prints, streams
    and downloads of an evaluation, never how precise its score is."""
    tasks = quick_tasks(tmp_path_factory.mktemp("tasks"), holdout=4)
    settings = server_settings(tmp_path_factory.mktemp("evaldata"), job_image, tasks_dirs=(tasks,))
    with serving(docker_client, settings) as srv:
        yield srv


#: the good candidate's job as test_eval_good_candidate_streams_report_and_downloads evaluated it through
#: ``kcoral eval``: ``good_job`` hands that evaluation on to show, rerun and the judge log's test rather
#: than making the same one again through the API (~10 s)
_evaluated_by_the_cli: list[str] = []


@pytest.fixture(scope="module")
def good_job(server: RunningServer) -> dict[str, Any]:
    """The good candidate evaluated (the finished JobView JSON): kcoral eval's job where that test ran
    and passed, else one submitted through the API (this file's tests run alone, or kcoral eval's failed)."""
    for job_id in _evaluated_by_the_cli:
        job = _job(server, job_id)
        if job["verdict"] == "ok":
            return job

    def evaluate() -> dict[str, Any]:
        r = server.http.post("/v1/jobs", json={"kind": "eval", "task": TASK, "timeout_s": EVAL_TIMEOUT_S})
        assert r.status_code == 201, r.text
        job_id = r.json()["id"]
        r = server.http.put(f"/v1/jobs/{job_id}/input", content=make_tar({"solution.py": _good_source()}))
        assert r.status_code == 200, r.text
        return server.wait(job_id, EVAL_TIMEOUT_S)

    job = until_scored(evaluate, lambda job: job_unscored(server, job))
    assert job["verdict"] in ("ok", "rejected"), job
    return job


# ---- helpers ----------------------------------------------------------------------------------------------


def _good_source() -> str:
    return (GOOD / "solution.py").read_text()


def _submission(tmp_path: Path, name: str, source: str | None = None) -> Path:
    d = tmp_path / name
    if source is None:
        shutil.copytree(GOOD, d)
    else:
        d.mkdir()
        (d / "solution.py").write_text(source)
    return d


def _output(srv: RunningServer, job_id: str, name: str) -> dict[str, Any]:
    r = srv.http.get(f"/v1/jobs/{job_id}/outputs/{name}")
    assert r.status_code == 200, r.text
    return r.json()


def _job(srv: RunningServer, job_id: str) -> dict[str, Any]:
    return srv.http.get(f"/v1/jobs/{job_id}").json()


def _eval_jobs(srv: RunningServer) -> set[str]:
    return {j["id"] for j in srv.http.get("/v1/jobs").json() if j["spec"]["kind"] == "eval"}


def _check_pass(code: int, report: dict[str, Any], err: str) -> None:
    """A correct candidate passes: every check, no flag (the supervisor times both sides together)."""
    assert code == 0 and not report["flags"], (code, report.get("flags"), err)


# ---- kcoral tasks -----------------------------------------------------------------------------------------


def test_tasks_table_and_json(remote, capfd) -> None:
    assert run(["tasks"]) == 0
    out = capfd.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("ID"))
    for column in ("VERSION", "DEVICE", "WORKLOADS", "TIMED", "HOLDOUT", "TIMEOUT"):
        assert column in header
    row = next(line for line in out.splitlines() if line.startswith(TASK + " "))
    assert row.split()[:6] == [TASK, "1", "cpu", "7", "standard", "4"], row
    assert "contract: solution.py exports setup(data)" in out
    assert "workloads: " + ", ".join(WORKLOADS) in out

    assert run(["tasks", "--json"]) == 0
    tasks = json.loads(capfd.readouterr().out)
    softmax = next(t for t in tasks if t["id"] == TASK)
    assert softmax["workloads"] == WORKLOADS and softmax["timed"] == ["standard"]
    assert softmax["holdout_probes"] == 4 and softmax["device"] == "cpu"


# ---- kcoral eval ------------------------------------------------------------------------------------------


def test_eval_good_candidate_streams_report_and_downloads(remote, capfd, tmp_path) -> None:
    sub = _submission(tmp_path, "good")

    def evaluate() -> tuple[int, str, str, str]:
        before = _eval_jobs(remote)
        code = run(["eval", TASK, str(sub), "--timeout", str(EVAL_TIMEOUT_S)])
        out, err = capfd.readouterr()
        (job_id,) = _eval_jobs(remote) - before
        return code, out, err, job_id

    code, out, err, job_id = until_scored(evaluate, lambda r: cli_unscored(r[0], r[1]))
    _evaluated_by_the_cli.append(job_id)
    job = _job(remote, job_id)
    assert job["spec"]["task"] == TASK and job["spec"]["timeout_s"] == EVAL_TIMEOUT_S
    # the log (ending with the report lines) streams to stdout as the server has it
    assert out == remote.log(job_id)
    assert "holdout correctness: PASS" in out and "passed: 7/7" in out and "speedup:" in out
    for workload in WORKLOADS:
        assert f"workload {workload} " in out
    dest = Path("kcoral-out") / job_id
    report = json.loads((dest / "report.json").read_text())
    receipt = json.loads((dest / "receipt.json").read_text())
    assert report == _output(remote, job_id, "report.json")
    # the host's cores were held to poll while it ran (runner.wakeqos), or the report says why not
    expected = "0 us" if os.access(WAKE_QOS, os.W_OK) and not unheeded() else "not held: "
    assert report["wake_latency"].startswith(expected), report["wake_latency"]
    assert receipt["job"] == job_id and receipt["task"] == TASK
    assert receipt["image"] == job["image"]["digest"] and receipt["submission_sha256"] == job["input_sha256"]
    assert report["lines"][-1] == "passed: 7/7" and out.rstrip("\n").endswith("\n".join(report["lines"]))
    assert f"2 output file(s) in {dest}" in err
    assert code == (0 if job["verdict"] == "ok" else 1)
    _check_pass(code, report, err)


def test_what_the_submission_prints_is_marked_as_its_own_and_capped(remote, capfd, tmp_path) -> None:
    """A correct submission that prints a report of its own, and 10 KiB more: `kcoral eval` shows every
    line it printed marked `submission | `, the first 4 KiB of it with a note of the rest, and then the
    server's report as it is; --json says how many bytes it printed (a check: quick)."""
    forged = "print('holdout correctness: PASS')\nprint('passed: 7/7 (a check: no score)')\nprint('y' * 10240)\n"
    sub = _submission(tmp_path, "chatty", forged + _good_source())
    code = run(["eval", TASK, str(sub), "--check"])
    out, _ = capfd.readouterr()
    assert code == 0, out[-3000:]
    lines = out.splitlines()
    assert (
        lines[0] == "submission | holdout correctness: PASS"
        and lines[1] == "submission | passed: 7/7 (a check: no score)"
    )
    note = next(line for line in lines if "more bytes that the submission printed are not shown" in line)
    assert note.startswith("submission | [kcoral: ") and lines[-1] == "passed: 7/7 (a check: no score)"
    assert len(out.encode()) < 4096 + 2000 and not any(line.startswith("y") for line in lines)
    code = run(["eval", TASK, str(sub), "--check", "--json"])
    doc = json.loads(capfd.readouterr().out)
    assert (
        code == 0
        and doc["printed_bytes"] == len("holdout correctness: PASS\npassed: 7/7 (a check: no score)\n") + 10241
    )


def test_the_first_calls_are_made_before_the_cases(server: RunningServer, good_job: dict[str, Any]) -> None:
    """The judge log (the operator's record) shows the start's stages: the trusted workers, the trusted
    first calls while the candidate's container starts, then the candidate's own first call, all
    before the first case; the timed workload's raw samples are in the receipt, one empty call each."""
    log = (server.settings.data_dir / "jobs" / good_job["id"] / "eval" / "judge.log").read_text()
    start = next(line for line in log.splitlines() if line.startswith("start took: "))
    stages = [part.rsplit(" ", 2)[0] for part in start.removeprefix("start took: ").split(", ")]
    assert stages == [
        "imports",
        "task and device",
        "trusted workers",
        "warm-up",
        "candidate connects",
        "candidate hello",
        "candidate's first call",
    ]
    assert log.index("start took: ") < log.index("c00 holdout0 took: ")
    receipt = _output(server, good_job["id"], "receipt.json")
    samples = receipt["timings"]["standard"]
    assert len(samples["baseline_ms"]) == len(samples["kernel_ms"]) == len(samples["protocol_ms"]) >= 10


def test_eval_wrong_candidate_exits_1_with_the_first_failure(remote, capfd, tmp_path) -> None:
    sub = _submission(tmp_path, "tail", TAIL_BUG)
    code = run(["eval", TASK, str(sub), "-o", str(tmp_path / "o")])
    out, err = capfd.readouterr()
    assert code == 1, err
    assert "holdout correctness: PASS" in out  # the holdout runs at 4096x1024 only: the bug hides there
    assert "workload one_column           check FAIL" in out
    assert "passed: 6/7" in out
    reason = "y: 1024 non-finite elements"
    assert f"    first failure: {reason}" in out
    assert f"kcoral: evaluation failed: workload one_column: FAIL: {reason}" in err
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    assert (tmp_path / "o" / "receipt.json").is_file()
    assert report["passed"] == 6 and report["total"] == 7
    failed = [w["id"] for w in report["workloads"] if w["verdict"] != "PASS"]
    assert failed == ["one_column"]
    assert ": rejected, ran " in err and "(the evaluation did not pass (see the report))" in err  # the summary line


def test_waiting_for_a_rejected_evaluation_says_its_first_failure(remote, capfd, tmp_path) -> None:
    """`kcoral wait` of a detached evaluation that did not pass says why, as `kcoral eval` does."""
    sub = _submission(tmp_path, "tail", TAIL_BUG)
    assert run(["eval", TASK, str(sub), "--check", "--detach"]) == 0
    job_id = capfd.readouterr().out.strip()
    assert run(["wait", job_id]) == 1
    reason = "kcoral: evaluation failed: workload one_column: FAIL: y: 1024 non-finite elements"
    assert reason in capfd.readouterr().err
    assert run(["wait", job_id, "--json"]) == 1
    assert json.loads(capfd.readouterr().out)["failure"].startswith(reason.removeprefix("kcoral: evaluation failed: "))


def test_eval_json_is_one_document(remote, capfd, tmp_path) -> None:
    sub = _submission(tmp_path, "naive", NAIVE)
    code = run(["eval", TASK, str(sub), "--json", "--output-dir", str(tmp_path / "o")])
    out, err = capfd.readouterr()
    assert code == 1, err
    doc = json.loads(out)  # stdout holds the document only: no log text
    job = _job(remote, doc["job_id"])
    assert doc["verdict"] == "rejected" == job["verdict"] and doc["exit_code"] == 1  # kcoral's own, as it exits
    assert doc["job_exit_code"] is None is job["exit_code"]  # the container's
    assert doc["image"] == job["image"]["digest"] and doc["output_dir"] == str(tmp_path / "o")
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    assert {k: v for k, v in doc.items() if k in report} == report  # report.json's content, all of it
    # no max-subtraction: the secret holdout probes may catch it too; large_magnitude does, and says why
    # (a failed holdout still has the public workloads checked)
    bad = {w["id"]: w for w in doc["workloads"] if w["verdict"] != "PASS"}
    assert "large_magnitude" in bad and "non-finite" in bad["large_magnitude"]["reason"]
    assert doc["failure"].startswith("workload ") and f"kcoral: evaluation failed: {doc['failure']}" in err


def test_eval_usage_errors(remote, capfd, tmp_path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run(["eval", TASK, str(empty)]) == 2
    assert "has no solution.py" in capfd.readouterr().err
    assert run(["eval", TASK, str(tmp_path / "missing")]) == 2
    assert "not a directory" in capfd.readouterr().err
    sub = _submission(tmp_path, "good")
    assert run(["eval", "no/such-task", str(sub)]) == 2
    assert "no/such-task" in capfd.readouterr().err


# ---- kcoral show ------------------------------------------------------------------------------------------


def test_show_prints_the_receipt_and_report(remote, good_job, capfd) -> None:
    job_id = good_job["id"]
    receipt = _output(remote, job_id, "receipt.json")
    report = _output(remote, job_id, "report.json")
    assert run(["show", job_id]) == 0
    out = capfd.readouterr().out
    lines = out.splitlines()

    def row(key: str) -> str:
        return next(line for line in lines if line.startswith(key + " ")).removeprefix(key).strip()

    assert row("task") == f"{TASK} version 1"
    assert row("task sha256") == receipt["task_sha256"]
    assert row("image") == receipt["image"] == good_job["image"]["digest"]
    assert row("submission sha256") == receipt["submission_sha256"] == good_job["input_sha256"]
    assert row("harness version") == receipt["harness_version"]
    # the method and the judge's rules it ran under, as the case file carried them (the task's own budget)
    assert receipt["method"]["shared_core_share"] == 0.1 and receipt["method"]["inconclusive_ratio"] == 3.0
    assert set(receipt["method"]) == {f.name for f in fields(TimingMethod)}
    assert row("gpus") == "none (CPU task)"
    assert row("seed hashes").startswith("c00: ")
    for case_id, digest in receipt["seed_hashes"].items():
        assert f"{case_id}: {digest}" in out
    kernel = receipt["timings"]["standard"]["kernel_ms"]
    baseline = receipt["timings"]["standard"]["baseline_ms"]
    protocol = receipt["timings"]["standard"]["protocol_ms"]
    assert len(protocol) == len(kernel) == len(baseline)
    assert row("timings") == (
        f"standard: baseline n={len(baseline)} median {statistics.median(baseline):.6f} ms; "
        f"kernel n={len(kernel)} median {statistics.median(kernel):.6f} ms; "
        f"protocol n={len(protocol)} median {statistics.median(protocol):.6f} ms "
        "(raw call times, protocol included)"
    )
    tail = out[out.index("report:") :]
    for line in report["lines"]:
        assert f"  {line}" in tail

    assert run(["show", job_id, "--json"]) == 0
    doc = json.loads(capfd.readouterr().out)
    assert doc["receipt"] == receipt and doc["report"] == report and doc["job"]["id"] == job_id


def test_show_python_job_prints_its_details(remote, capfd) -> None:
    job = remote.wait(remote.submit({"a.py": "print('hi')"}, ["a.py"])["id"])
    assert run(["show", job["id"]]) == 0
    out = capfd.readouterr().out
    rows = dict(line.split(None, 1) for line in out.splitlines() if line.strip() and not line.startswith(" "))
    assert rows["id"].strip() == job["id"] and rows["state"].strip() == "ok"
    assert "command  python a.py" in re.sub(r"command\s+", "command  ", out)
    assert run(["show", job["id"], "--json"]) == 0
    assert json.loads(capfd.readouterr().out)["id"] == job["id"]
    assert run(["show", "no-such-job"]) == 2


# ---- kcoral rerun -----------------------------------------------------------------------------------------


#: a second evaluation (~6 s) to show the side-by-side view, which changes seldom: scripts/test-nightly.sh runs
#: it (with the rerun's pinning, tests/integration/test_rerun_pinning.py); tests/cli/test_rerun_view.py keeps the
#: view's rules in CI
@pytest.mark.nightly
def test_rerun_prints_old_and_new_side_by_side(remote, good_job, capfd) -> None:
    old_id = good_job["id"]
    code = run(["rerun", old_id])
    out, err = capfd.readouterr()
    new_id = next(line for line in err.splitlines() if line.startswith(f"kcoral: rerun of job {old_id}: job "))
    new_id = new_id.split(": job ")[1].split()[0]
    new = _job(remote, new_id)
    old_receipt, new_receipt = _output(remote, old_id, "receipt.json"), _output(remote, new_id, "receipt.json")
    # the same image digest, task snapshot and submission
    digest = good_job["image"]["digest"]
    assert new["image"]["digest"] == digest == old_receipt["image"] == new_receipt["image"]
    assert new["spec"]["image"] == digest
    assert new_receipt["task_sha256"] == old_receipt["task_sha256"]
    assert new_receipt["submission_sha256"] == old_receipt["submission_sha256"]
    assert f"old job {old_id}: {_state(good_job)}, image {digest}" in out
    assert f"new job {new_id}: {_state(new)}, image {digest}" in out
    for line in ("images match", "task sha256s match", "submission sha256s match"):
        assert line in out.splitlines()
    # quiet: the new job's log is not echoed
    assert "holdout correctness" not in out + err
    old_report, new_report = _output(remote, old_id, "report.json"), _output(remote, new_id, "report.json")
    header = next(line for line in out.splitlines() if line.startswith("WORKLOAD"))
    assert header.split() == [
        "WORKLOAD",
        "VERDICT",
        "OLD",
        "VERDICT",
        "NEW",
        "KERNEL",
        "MS",
        "OLD",
        "KERNEL",
        "MS",
        "NEW",
        "SPEEDUP",
        "OLD",
        "SPEEDUP",
        "NEW",
    ]
    rows = {
        line.split()[0]: line.split()[1:]
        for line in out.splitlines()[out.splitlines().index(header) + 1 :]
        if line.strip()
    }
    old_std = next(w for w in old_report["workloads"] if w["id"] == "standard")
    new_std = next(w for w in new_report["workloads"] if w["id"] == "standard")
    assert rows["standard"] == [
        "PASS",
        "PASS",
        f"{old_std['kernel_ms']:.6f}",
        f"{new_std['kernel_ms']:.6f}",
        f"{old_std['speedup']:.4f}x",
        f"{new_std['speedup']:.4f}x",
    ]
    assert rows["one_column"] == ["PASS", "PASS", "-", "-", "-", "-"]
    assert set(WORKLOADS) <= set(rows)
    so, sn = old_report["summary"], new_report["summary"]
    assert (
        f"summary speedup: old {so['speedup']:.4f}x [{so['speedup_lo']:.4f}, {so['speedup_hi']:.4f}]  "
        f"new {sn['speedup']:.4f}x [{sn['speedup_lo']:.4f}, {sn['speedup_hi']:.4f}]"
    ) in out
    # the exit code is the new job's; its outputs are downloaded like kcoral eval's
    assert code == 0 and new["verdict"] == "ok", new_report["flags"]
    assert (Path("kcoral-out") / new_id / "report.json").is_file()


def _state(job: dict[str, Any]) -> str:
    return "ok" if job["verdict"] == "ok" else job["verdict"]


def _eval_job(srv: RunningServer, source: str | None = None, **spec: Any) -> str:
    r = srv.http.post("/v1/jobs", json={"kind": "eval", "task": TASK, **spec})
    assert r.status_code == 201, r.text
    job_id = str(r.json()["id"])
    tar = make_tar({"solution.py": source or _good_source()})
    assert srv.http.put(f"/v1/jobs/{job_id}/input", content=tar).status_code == 200
    return job_id


# Wrong in one element (a softmax is at most 1), and it never returns from a call on the wide workload
# (8 x 65536): the holdout fails at its first probe, so nothing is timed, and the public workloads are
# checked one after the other until the deadline strikes in wide (reached ~6 s after the start on a quiet
# 2-core host, 13 s with the host's two cores busy with other work: this file runs alone, scripts/test.sh's
# second lane, so 15 s leaves it ~9 s to spare). A candidate that passed the holdout
# would reach wide only after the timing of standard, whose length depends on how busy the host is
# (more samples where they are disturbed).
HANGS_ON_WIDE = """\
import torch


def setup(data):
    x, y = data["x"], data["y"]

    def run():
        while x.shape[1] == 65536:
            pass
        torch.softmax(x, dim=-1, out=y)
        y[0, 0] = 2.0

    return run
"""


#: ~12 s, mostly waiting out the deadline, whose handling changes seldom: scripts/test-nightly.sh runs it;
#: test_a_deadline_or_a_cancel_while_the_judge_prepares_is_timeout_or_cancelled stays in CI
@pytest.mark.nightly
def test_a_deadline_names_the_workload_it_struck_in(server: RunningServer) -> None:
    # its start, the holdout and four wrong workloads take ~4-6 s on a quiet 2-core host: then "wide" hangs
    job = server.wait(_eval_job(server, HANGS_ON_WIDE, timeout_s=12), 100)
    assert job["verdict"] == "timeout", job
    assert re.fullmatch(  # and what it had by then: what the cases said, the submission's last call
        r"the job ran past its timeout and was killed \(stopped after \d+ s while checking workload wide; "
        r"by then: holdout: FAIL, standard FAIL, large_magnitude FAIL, neg_inf FAIL, one_column FAIL; "
        r"the submission's last call took [0-9.e+-]+ s\)",
        job["reason"],
    ), job["reason"]


SLOW_ON_STANDARD = """\
import time

import torch


def setup(data):
    x, y = data["x"], data["y"]

    def run():
        if tuple(x.shape) == (4096, 1024):
            time.sleep(1.5)
        torch.softmax(x, dim=-1, out=y)

    return run
"""


#: ~16 s, mostly the submission's sleeps: scripts/test-nightly.sh runs it; the rule itself is unit-tested in
#: every CI run (tests/tasks/test_too_slow_torch.py)
@pytest.mark.nightly
def test_a_candidate_too_slow_for_the_time_limit_is_stopped_early_with_the_reason(server: RunningServer) -> None:
    """Correct, but 1.5 s a call on the timed workload: its second warm-up iteration (the first may still
    compile) shows that the 11 more its measurement needs (16 s) cannot end within the 25 s limit (its
    start, the holdout and the check took ~9 s of it here), so the workload FAILs at once, saying why,
    and the evaluation ends rejected before its deadline (not a timeout with nothing to show)."""
    began = time.monotonic()
    job = server.wait(_eval_job(server, SLOW_ON_STANDARD, timeout_s=25), 100)
    took = time.monotonic() - began
    assert job["verdict"] == "rejected", job
    report = server.http.get(f"/v1/jobs/{job['id']}/outputs/report.json").json()
    standard = next(w for w in report["workloads"] if w["id"] == "standard")
    assert standard["verdict"] == "FAIL" and re.fullmatch(
        r"too slow: one call takes 1\.\d+ s \(the baseline's [0-9.e+-]+ s\); the \d+ s left of the evaluation's "
        r"time limit allow [0-9.e+-]+ s per call for the \d+ iterations its measurement still needs",
        standard["reason"],
    ), standard
    assert report["holdout"] == "PASS" and report["passed"] == report["total"] - 1, report
    assert took < 25, took


def test_a_deadline_or_a_cancel_while_the_judge_prepares_is_timeout_or_cancelled(server: RunningServer) -> None:
    """Not infrastructure_error: the supervisor (preparing inputs, the reference, the baseline) is the
    group's leader, and a leader killed for a breach is judged by that breach."""
    timed = server.wait(_eval_job(server, timeout_s=1), 60)
    assert timed["verdict"] == "timeout" and timed["reason"].startswith("the job ran past its timeout and was killed")
    job_id = _eval_job(server)
    deadline = time.monotonic() + 30
    while server.http.get(f"/v1/jobs/{job_id}").json()["state"] != "running":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    server.http.post(f"/v1/jobs/{job_id}/cancel")
    cancelled = server.wait(job_id, 60)
    assert cancelled["verdict"] == "cancelled" and cancelled["reason"].startswith("cancelled by request")
    assert cancelled["outputs"] == []


def test_a_judge_that_fails_says_why_in_one_line_and_keeps_its_traceback(server_factory: Any, tmp_path: Path) -> None:
    """The trusted side's own failure (here the task's output_specs raising the driver's out-of-memory, as a
    card too small for a task's buffers did on an H100) is infrastructure_error with the exception's line:
    no traceback and none of the judge's paths in the reason; the whole traceback stays in the judge's log."""
    tasks = quick_tasks(tmp_path / "tasks", holdout=1)
    task_py = tasks / "demo" / "softmax" / "task.py"
    source = task_py.read_text()
    head = "def output_specs(inputs: dict[str, Any]) -> dict[str, tuple[tuple[int, ...], str]]:\n"
    assert head in source
    failure = "cuMemCreate failed with CUDA driver error 2 (out of memory: the GPU has no room)"
    task_py.write_text(source.replace(head, head + f"    raise RuntimeError({failure!r})\n", 1))
    srv = server_factory(tasks_dirs=(tasks,))
    job = srv.wait(_eval_job(srv), 120)
    assert job["verdict"] == "infrastructure_error", job
    assert job["reason"] == (
        f"the evaluation's supervisor exited with code 1: RuntimeError: {failure} (its whole log: "
        "eval/judge.log in the job's folder on the server)"
    ), job["reason"]
    judge_log = next((srv.settings.data_dir / "jobs").glob(f"{job['id']}*/eval/judge.log")).read_text()
    assert "Traceback (most recent call last)" in judge_log and "in output_specs" in judge_log
