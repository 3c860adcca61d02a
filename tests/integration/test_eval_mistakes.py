"""The mistakes an agent makes writing its first solution.py, evaluated for real: each gets the
reason it can act on (the submission's own exception and frames, or the check that failed), in the
printed lines and in report.json, while the holdout stays PASS/FAIL.

All of them go to one server at once (two CPU slots; one of them through ``kcoral eval --json``, which
waits behind the others): a wrong candidate fails its holdout quickly and its public workloads are
checked untimed, so the whole file takes about a minute.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from kcoral.cli.commands.eval_cmd import first_failure
from kcoral.cli.main import run
from kcoral.protocol.models import JobView
from kcoral.protocol.typeddata import from_data
from kcoral.tasks.documents import EvalReport, parse
from tests.conftest import RunningServer, make_tar

#: no timing asserted, nothing done to the engine that another file would see (scripts/test.sh)
pytestmark = pytest.mark.concurrent

TASK = "demo/softmax"
SOFTMAX = "torch.softmax(x, dim=-1, out=y)"

#: name -> (solution.py, what the first failure line says, the submission's frame it names or None)
MISTAKES: dict[str, tuple[str, str, str | None]] = {
    "no_setup": (
        "import torch\n\ndef set_up(data):\n    return lambda: None\n",
        "ERROR: AttributeError: module 'solution' has no attribute 'setup'",
        None,
    ),
    "wrong_signature": (
        "import torch\n\ndef setup():\n    return lambda: None\n",
        "ERROR: TypeError: setup() takes 0 positional arguments but 1 was given",
        None,
    ),
    "raises_in_setup": (
        "import torch\n\ndef setup(data):\n    raise ValueError('no tile size fits ' + str(data['x'].shape[1]))\n",
        "ERROR: ValueError: no tile size fits",
        "solution.py, line 4, in setup",
    ),
    "raises_in_call": (
        "import torch\n\ndef setup(data):\n    x, y = data['x'], data['y']\n\n"
        "    def run():\n        y.copy_(x.softmaxx(-1))\n\n    return run\n",
        "ERROR: AttributeError: 'Tensor' object has no attribute 'softmaxx'",
        "solution.py, line 7, in run",
    ),
    "rebinds_output": (
        "import torch\n\ndef setup(data):\n    def run():\n        data['y'] = torch.softmax(data['x'], dim=-1)\n\n"
        "    return run\n",
        "ERROR: RuntimeError: the submission replaced data['y'] instead of writing into it",
        None,
    ),
    "wrong_values": (
        "import torch\n\ndef setup(data):\n    x, y = data['x'], data['y']\n    return lambda: y.copy_(x.exp())\n",
        "FAIL: y: ",
        None,
    ),
    "nan": (
        "import torch\n\ndef setup(data):\n    y = data['y']\n    return lambda: y.fill_(float('nan'))\n",
        "FAIL: y: ",
        None,
    ),
    "returns_none": (
        "import torch\n\ndef setup(data):\n    x, y = data['x'], data['y']\n    " + SOFTMAX + "\n",
        "ERROR: TypeError: setup returned NoneType, not a callable",
        None,
    ),
    "numpy_on_tensors": (
        "import numpy as np\n\ndef setup(data):\n    x, y = data['x'], data['y']\n\n"
        "    def run():\n        np.exp(x, out=y)\n\n    return run\n",
        "ERROR: TypeError: ",
        "solution.py, line 7, in run",
    ),
    "syntax_error": (
        "import torch\n\ndef setup(data:\n    return None\n",
        "ERROR: importing solution.py failed: SyntaxError: '(' was never closed",
        None,
    ),
}


def submit(server: RunningServer, source: str) -> str:
    r = server.http.post("/v1/jobs", json={"kind": "eval", "task": TASK})
    assert r.status_code == 201, r.text
    job_id = r.json()["id"]
    put = server.http.put(f"/v1/jobs/{job_id}/input", content=make_tar({"solution.py": source}))
    assert put.status_code == 200, put.text
    return job_id


def report_of(server: RunningServer, job: dict[str, Any]) -> EvalReport:
    return parse(EvalReport, server.http.get(f"/v1/jobs/{job['id']}/outputs/report.json").content)


#: ten evaluations (~51 s of CI's concurrent lane) of how a failure is described, which changes seldom
#: (tests/tasks/test_failures.py has its rules): scripts/test-nightly.sh runs it, not CI
@pytest.mark.nightly
def test_each_first_mistake_gets_a_reason_it_can_act_on(server: RunningServer, capfd, tmp_path: Path) -> None:
    # the syntax error through `kcoral eval --json` (queued behind the others, which go through the API):
    # --json carries the same line, for an early failure too (the submission does not import)
    ids = {name: submit(server, source) for name, (source, _, _) in MISTAKES.items() if name != "syntax_error"}
    sub = tmp_path / "syntax"
    sub.mkdir()
    (sub / "solution.py").write_text(MISTAKES["syntax_error"][0])
    capfd.readouterr()
    code = run(["eval", TASK, str(sub), "--json", "--remote", server.url, "-o", str(tmp_path / "o")])
    doc = json.loads(capfd.readouterr().out)
    ids["syntax_error"] = doc["job_id"]
    seen: dict[str, str] = {}
    for name, (_, expected, frame) in MISTAKES.items():
        job = server.wait(ids[name], timeout=600)
        assert job["verdict"] == "rejected", (name, job)
        report = report_of(server, job)
        line = first_failure(from_data(JobView, job), report)
        seen[name] = line
        assert line.startswith("workload standard: " + expected), (name, line)
        assert report.holdout.value == "FAIL" and report.summary is None and report.passed == 0
        assert "probe" not in line and "holdout" not in line  # the holdout stays PASS/FAIL
        reason = report.workloads[0].reason
        if frame is not None:
            assert frame in reason and "/job/input" not in reason, (name, reason)
        assert "kcoral/tasks/harness" not in reason and "site-packages" not in reason, (name, reason)
        printed = server.log(ids[name])
        assert "    first failure: " + line.split(": ", 2)[2] in printed, (name, printed[-2000:])
    print(json.dumps(seen, indent=1))
    assert code == 1 and doc["failure"].startswith("workload standard: ERROR: importing solution.py failed: ")
    assert doc["failure"] == seen["syntax_error"]
    assert "SyntaxError" in doc["workloads"][0]["reason"] and "def setup(data:" in doc["workloads"][0]["reason"]


def test_a_check_gives_full_tracebacks_and_no_score_in_seconds(server: RunningServer, capfd, tmp_path: Path) -> None:
    """`kcoral eval --check`: the public workloads only, untimed, every frame of a failure; a check
    that passes exits 0 with no score, and takes a fraction of an evaluation."""
    wrong = tmp_path / "wrong"
    wrong.mkdir()
    (wrong / "solution.py").write_text(MISTAKES["numpy_on_tensors"][0])
    code = run(["eval", TASK, str(wrong), "--check", "--json", "--remote", server.url, "-o", str(tmp_path / "w")])
    doc = json.loads(capfd.readouterr().out)
    assert code == 1 and doc["check"] is True and "holdout" not in doc and "summary" not in doc
    reason = doc["workloads"][0]["reason"]
    assert "solution.py, line 7, in run" in reason and "kcoral/tasks/harness/worker.py" in reason  # every frame
    assert doc["lines"][0].startswith("check: ") and doc["lines"][-1] == "passed: 0/7 (a check: no score)"

    good = tmp_path / "good"
    good.mkdir()
    source = f"import torch\n\ndef setup(data):\n    x, y = data['x'], data['y']\n    return lambda: {SOFTMAX}\n"
    (good / "solution.py").write_text(source)
    began = time.monotonic()
    code = run(["eval", TASK, str(good), "--check", "--remote", server.url, "-o", str(tmp_path / "g")])
    took = time.monotonic() - began
    out, err = capfd.readouterr()
    assert code == 0, out[-2000:] + err[-2000:]
    assert "passed: 7/7 (a check: no score)" in out and "speedup" not in out and "holdout correctness" not in out
    job = server.http.get("/v1/jobs").json()[0]
    assert job["spec"]["check"] is True and job["verdict"] == "ok"
    print(f"a passing check took {took:.1f} s")


def test_a_chatty_candidate_is_cut_with_a_note_not_stopped(server: RunningServer) -> None:
    """The candidate's output is capped per evaluation (eval_log_bytes, 256 KiB): the rest is dropped and
    the log says how much, and the evaluation goes on (a check here: quick)."""
    chatty = (
        "import torch\n\nfor _ in range(2048):\n    print('x' * 1023)\n\n"
        f"def setup(data):\n    x, y = data['x'], data['y']\n    return lambda: {SOFTMAX}\n"
    )
    r = server.http.post("/v1/jobs", json={"kind": "eval", "task": TASK, "check": True})
    job_id = r.json()["id"]
    assert server.http.put(f"/v1/jobs/{job_id}/input", content=make_tar({"solution.py": chatty})).status_code == 200
    job = server.wait(job_id, timeout=300)
    assert job["verdict"] == "ok", job
    log = server.log(job_id)
    kept = server.settings.limits.eval_log_bytes
    assert log.count("x" * 1023) <= kept // 1024 + 1
    assert re.search(
        r"\[kcoral: the candidate printed \d+ bytes more than the 262144 kept here; they were dropped\]", log
    )
    assert log.rstrip().endswith("passed: 7/7 (a check: no score)") and kept == 262144


def test_a_candidate_that_writes_into_its_inputs_is_told_or_failed_as_the_task_says(
    server_factory: Any, tmp_path: Path
) -> None:
    """A correct candidate that also overwrites its input: by default it passes with a warning in the
    report (its row and the printed lines); a task whose manifest says ``inputs_read_only`` fails it with
    the reason. Checks only (untimed: quick)."""
    import shutil

    tasks = tmp_path / "tasks"
    shutil.copytree(Path(__file__).parents[2] / "tasks" / "demo", tasks / "demo")
    shutil.copytree(tasks / "demo", tasks / "strict")
    manifest = json.loads((tasks / "strict" / "softmax" / "manifest.json").read_text())
    manifest.update(id="strict/softmax", inputs_read_only=True)
    (tasks / "strict" / "softmax" / "manifest.json").write_text(json.dumps(manifest))
    server = server_factory(tasks_dirs=(tasks,))
    clobbers = (
        "import torch\n\ndef setup(data):\n    x, y = data['x'], data['y']\n\n"
        f"    def run():\n        {SOFTMAX}\n        x.zero_()\n\n    return run\n"
    )
    ids = {}
    for task in ("demo/softmax", "strict/softmax"):
        r = server.http.post("/v1/jobs", json={"kind": "eval", "task": task, "check": True})
        assert r.status_code == 201, r.text
        ids[task] = r.json()["id"]
        put = server.http.put(f"/v1/jobs/{ids[task]}/input", content=make_tar({"solution.py": clobbers}))
        assert put.status_code == 200, put.text
    told = server.wait(ids["demo/softmax"], timeout=300)
    assert told["verdict"] == "ok", told
    report = report_of(server, told)
    assert report.passed == report.total
    assert all("wrote into its input x" in (w.warnings or [""])[0] for w in report.workloads), report.workloads
    assert "    warning: the submission wrote into its input x (allowed by this task" in server.log(told["id"])
    failed = server.wait(ids["strict/softmax"], timeout=300)
    assert failed["verdict"] == "rejected", failed
    reason = report_of(server, failed).workloads[0].reason
    assert reason == "the submission wrote into its input x: this task's inputs are read-only", reason
