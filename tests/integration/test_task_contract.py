"""A task's whole contract from a real server (GET /v1/tasks/ID, `kcoral tasks show`, `kcoral init`):
each workload's shapes and dtypes, the holdout by its count, the timing method and score, the
packages asked of the job image itself; and the template `init` writes evaluates as passing."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from kcoral.cli.main import run
from tests.conftest import RunningServer
from tests.scored import cli_unscored, until_scored

TASK = "demo/softmax"


def test_the_contract_names_every_workloads_data_and_the_images_packages(server: RunningServer) -> None:
    began = time.monotonic()
    r = server.http.get(f"/v1/tasks/{TASK}")
    first = time.monotonic() - began
    assert r.status_code == 200, r.text
    doc = r.json()
    standard = next(w for w in doc["workloads"] if w["id"] == "standard")
    assert standard["timed"] is True and standard["inputs"] == {"x": {"shape": [4096, 1024], "dtype": "float32"}}
    assert standard["outputs"] == {"y": {"shape": [4096, 1024], "dtype": "float32"}}
    assert standard["scalars"] == {"rows": 4096, "cols": 1024}
    wide = next(w for w in doc["workloads"] if w["id"] == "wide")
    assert wide["inputs"]["x"]["shape"] == [8, 65536] and wide["tolerance"] == doc["tolerance"]
    assert doc["holdout_probes"] == 4 and doc["holdout"].startswith("4 secret probes")
    assert "holdout" not in json.dumps(doc["workloads"])  # the probes appear only by their count
    assert doc["timeout_s"] == 300 and doc["timing"]["min_reps"] == 10 and "min_reps" not in doc["timing_method"]
    assert "at least 10 calls" in doc["timing_method"] and "geometric mean" in doc["score"]
    # asked of the image: the versions a submission can import
    assert doc["image"] == server.settings.image and doc["python"].startswith("3.") and not doc.get("packages_error")
    assert {"torch", "numpy"} <= set(doc["packages"]) and doc["packages"]["torch"][0].isdigit()
    began = time.monotonic()
    assert server.http.get(f"/v1/tasks/{TASK}").json() == doc
    assert time.monotonic() - began < min(first, 1.0)  # asked once per image digest
    missing = server.http.get("/v1/tasks/no/such")
    assert missing.status_code == 404 and missing.json()["error"] == "not_found"


#: `kcoral tasks show`, `init` and the template evaluated (~9 s), which change seldom: scripts/test-nightly.sh
#: runs it; the contract's content stays in CI (the test above), and the templates pass in other CI tests
@pytest.mark.nightly
def test_tasks_show_and_init_then_the_template_passes(server: RunningServer, capfd, tmp_path: Path) -> None:
    assert run(["tasks", "show", TASK, "--remote", server.url]) == 0
    out, err = capfd.readouterr()
    assert "x float32[4096, 1024]" in out and "out: y float32[8, 65536]" in out
    assert "holdout: 4 secret probes" in out and "time limit 5m00s" in out and "packages: " in out
    assert f"kcoral init {TASK} DIR" in err
    assert run(["tasks", "show", TASK, "--json", "--remote", server.url]) == 0
    assert json.loads(capfd.readouterr().out)["id"] == TASK
    assert run(["tasks", "show", "no/such", "--remote", server.url]) != 0
    assert "no task 'no/such'" in capfd.readouterr().err
    assert run(["tasks", "--json", "--remote", server.url]) == 0  # the list is still `kcoral tasks`
    assert TASK in [t["id"] for t in json.loads(capfd.readouterr().out)]

    sub = tmp_path / "sub"
    assert run(["init", TASK, str(sub), "--remote", server.url]) == 0
    assert "torch.softmax(x, dim=-1, out=y)" in (sub / "solution.py").read_text()
    readme = (sub / "README.md").read_text()
    assert readme.startswith(f"# {TASK}") and f"kcoral eval {TASK} {sub}" in readme and "float32[4096, 1024]" in readme
    capfd.readouterr()
    assert run(["init", TASK, str(sub), "--remote", server.url]) == 2  # never overwrites without --force
    assert "already exist" in capfd.readouterr().err

    def evaluate() -> tuple[int, str, str]:
        code = run(["eval", TASK, str(sub), "--remote", server.url, "-o", str(tmp_path / "o")])
        return (code, *capfd.readouterr())

    code, out, err = until_scored(evaluate, lambda r: cli_unscored(r[0], r[1]))
    assert code == 0, out[-3000:] + err[-2000:]
    assert "holdout correctness: PASS" in out and "passed: 7/7" in out
