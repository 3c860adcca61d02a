"""The trusted batch mode (TimingMethod.batch) end to end on the CPU demo, against a real server and real
containers: a task whose manifest asks for batches of 4 scores the baseline's own code in batches and says
so, with the per-call figure measured beside it; and every call of a batch is checked, so a submission
that does the work only for a batch's first call fails, though its single calls (the holdout, the checks)
are right."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from typing import Any

import docker
import pytest

from kcoral.tasks.registry import DEFAULT_TASKS_DIR
from tests.conftest import RunningServer, make_tar, server_settings, serving
from tests.scored import pair_unscored, until_scored

TASK = "demo/softmax"
BATCH = 4
EVAL_TIMEOUT_S = 300

# Right whenever it is called on its own; a call that follows the previous one within a millisecond (the
# next call of a batch) does nothing, leaving the poisoned outputs: a 4x "gain" were the calls unchecked.
FIRST_OF_BATCH_ONLY = """\
import time

import torch

last = [0.0]


def setup(data):
    x, y = data["x"], data["y"]

    def run():
        if time.perf_counter() - last[0] > 0.001:
            torch.softmax(x, dim=-1, out=y)
        last[0] = time.perf_counter()

    return run
"""


@pytest.fixture(scope="module")
def batch_server(
    tmp_path_factory: pytest.TempPathFactory, docker_client: docker.DockerClient, job_image: str
) -> Iterator[RunningServer]:
    """A server whose demo/softmax is timed in batches of BATCH (a copy of the task, its manifest changed)."""
    tasks = tmp_path_factory.mktemp("tasks")
    shutil.copytree(DEFAULT_TASKS_DIR / "demo", tasks / "demo")
    path = tasks / "demo" / "softmax" / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["timing"].update(batch=BATCH, min_reps=12, max_reps=24, budget_s=4)
    path.write_text(json.dumps(manifest))
    with serving(
        docker_client, server_settings(tmp_path_factory.mktemp("batchdata"), job_image, tasks_dirs=(tasks,))
    ) as srv:
        yield srv


def _evaluate(srv: RunningServer, source: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the finished job, its report.json)."""
    r = srv.http.post("/v1/jobs", json={"kind": "eval", "task": TASK, "timeout_s": EVAL_TIMEOUT_S})
    assert r.status_code == 201, r.text
    job_id = r.json()["id"]
    r = srv.http.put(f"/v1/jobs/{job_id}/input", content=make_tar({"solution.py": source}))
    assert r.status_code == 200, r.text
    job = srv.wait(job_id, EVAL_TIMEOUT_S)
    r = srv.http.get(f"/v1/jobs/{job_id}/outputs/report.json")
    assert r.status_code == 200, (job, r.text)
    return job, r.json()


def test_the_baselines_own_code_is_scored_in_batches_and_the_report_says_so(batch_server: RunningServer) -> None:
    template = (DEFAULT_TASKS_DIR / "demo" / "softmax" / "template.py").read_text()
    job, report = until_scored(lambda: _evaluate(batch_server, template), pair_unscored)
    assert job["verdict"] == "ok", (job["verdict"], report.get("inconclusive"), "\n".join(report.get("lines", [])))
    row = next(w for w in report["workloads"] if w["timed"])
    assert row["batch"] == BATCH and row["verdict"] == "PASS", row
    s, lo, hi = row["per_call_speedup"]
    assert 0 < lo <= s <= hi and lo < 1.5 and hi > 0.67, row  # the same code one call at a time: near 1
    assert row["speedup_lo"] < 1.0 < row["speedup_hi"] or row["speedup"] < 1.2, row  # no gain of its own
    assert f"n={row['samples']} batches of {BATCH} calls" in "\n".join(report["lines"])
    assert any(line.strip().startswith(f"timed in batches of {BATCH} calls back to back") for line in report["lines"])
    assert not report["flags"], report["flags"]


def test_every_call_of_a_batch_is_checked(batch_server: RunningServer) -> None:
    job, report = _evaluate(batch_server, FIRST_OF_BATCH_ONLY)
    assert job["verdict"] == "rejected" and report["holdout"] == "PASS", (job, report.get("lines"))
    row = next(w for w in report["workloads"] if w["timed"])
    assert row["verdict"] != "PASS" and "of its batch" in row["reason"], row
    assert row.get("speedup") is None, row
