"""Candidates end to end: two labelled evaluations of demo/softmax through ``kcoral eval`` against a real
server (real containers, real SQLite, real HTTP), then ``kcoral history``, ``compare`` and ``best``
through the CLI, the web page's compare view and task board, and the signed receipt of a third evaluation
of the first submission, verified against the server's keys and offline.

The host's noise decides the scores (an evaluation may be inconclusive on a busy 2-core host), so
what depends on them is checked against what the server says, never assumed."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kcoral.cli.main import run
from kcoral.protocol.submission import tar_digest
from tests.conftest import RunningServer, make_tar, quick_tasks

#: three evaluations (~17 s) and what the CLI and the web page say of them, which changes seldom:
#: scripts/test-nightly.sh runs it, not CI (tests/runner/test_comparison.py keeps the comparison's words in CI)
pytestmark = pytest.mark.nightly

REPO = Path(__file__).resolve().parents[2]
GOOD = REPO / "tests" / "eval_candidates" / "softmax_good"
TASK = "demo/softmax"
WORDS = {"faster", "slower", "same", "ambiguous"}


@pytest.fixture
def server(server_factory: Callable[..., RunningServer], tmp_path_factory: pytest.TempPathFactory) -> RunningServer:
    """demo/softmax timed briefly (tests.conftest.quick_tasks): what is checked here is what the server and
    the CLI say about the evaluations, whatever their scores (three evaluations, ~4 s less each)."""
    return server_factory(tasks_dirs=(quick_tasks(tmp_path_factory.mktemp("tasks")),))


def run_json(capfd: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    code = run([*argv, "--json"])
    return code, json.loads(capfd.readouterr().out)


def test_two_labelled_candidates_through_history_compare_and_best(
    remote: RunningServer, capfd: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    first = tmp_path / "softmax_good"
    shutil.copytree(GOOD, first)
    second = tmp_path / "v2"
    second.mkdir()
    (second / "solution.py").write_text("# the second try\n" + (GOOD / "solution.py").read_text())

    # 1. two evaluations: the first named by default (its folder and the start of its files' digest)
    assert run(["eval", TASK, str(first)]) in (0, 1, 3)
    err = capfd.readouterr().err
    digest = tar_digest_of(first, tmp_path)
    default = f"softmax_good-{digest[:8]}"
    assert f"kcoral: label {default}" in err
    assert run(["eval", TASK, str(second), "--label", "v2"]) in (0, 1, 3)
    capfd.readouterr()

    # 2. the history: newest first, each with its label, the server's digest of what it received, a verdict
    code, history = run_json(capfd, "history", TASK)
    assert code == 0 and history["task"] == TASK and history["total"] == 2
    newer, older = history["evaluations"]
    assert (newer["label"], older["label"]) == ("v2", default)
    assert older["submission_digest"] == digest and newer["submission_digest"] != digest
    assert {newer["verdict"], older["verdict"]} <= {"ok", "rejected", "inconclusive"}
    scored = [e for e in (newer, older) if e["verdict"] == "ok" and e["score"]]
    best = max(scored, key=lambda e: e["score"]["speedup"], default=None)
    assert [e["id"] for e in (newer, older) if e["best"]] == ([best["id"]] if best else [])
    assert (history["best"] or {}).get("id") == (best["id"] if best else None)
    assert run(["history", TASK]) == 0
    table = capfd.readouterr().out
    assert "best: the highest speedup of a passing timed evaluation" in table
    assert (f"* best so far: {best['id']}" in table) if best else ("no best so far" in table)

    # 3. compare by label: per workload both speedups and B against A in words; the sources' diff
    code, found = run_json(capfd, "compare", default, "v2")
    assert code == 0 and found["a"]["id"] == older["id"] and found["b"]["id"] == newer["id"]
    assert not found["identical"] and found["diff"]["changed"] == ["solution.py"]
    assert "+# the second try\n" in found["diff"]["text"]
    standard = next(w for w in found["workloads"] if w["id"] == "standard")
    both = standard["a"] is not None and standard["b"] is not None
    assert standard["verdict"] in (WORDS if both else {""})
    assert run(["compare", newer["id"][-8:], "v2"]) == 0  # the same evaluation twice: the same files
    text = capfd.readouterr().out
    assert "identical submissions" in text and "B against A:" in text

    # 4. best: the local owner's best (no tokens file: one owner, who sees every token's)
    code, board = run_json(capfd, "best", TASK)
    assert code == 0 and board["scope"] == "every token"
    assert [e["evaluation"]["id"] for e in board["entries"]] == ([best["id"]] if best else [])

    # 5. mistakes are one line and exit 2, never a traceback
    assert run(["compare", "no-such-label", "v2"]) == 2
    err = capfd.readouterr().err
    assert err.count("\n") == 1 and "no evaluation has the id or label 'no-such-label'" in err
    assert run(["history", "no/such-task"]) == 2
    assert "no task 'no/such-task'" in capfd.readouterr().err

    # 6. the web page: the compare view (with the diff) and the task's board
    page = remote.http.get("/ui/compare", params={"a": default, "b": "v2"}).text
    assert 'class="side"' in page and "+# the second try" in page and 'id="verdict"' in page
    job_page = remote.http.get(f"/ui/jobs/{newer['id']}").text
    assert 'id="source"' in job_page and "# the second try" in job_page and "compare-previous" in job_page
    board_page = remote.http.get(f"/ui/tasks/{TASK}").text
    assert 'id="board"' in board_page and (best is None or best["id"] in board_page)

    # 7. the first submission again: its signed receipt counts both evaluations of the same files, verifies
    # against the server's keys and offline, and a changed byte (a better score) does not
    out = tmp_path / "again"
    assert run(["eval", TASK, str(first), "--output-dir", str(out)]) in (0, 1, 3)
    capfd.readouterr()
    receipt = json.loads((out / "receipt.json").read_text())
    assert receipt["submission_digest"] == digest and receipt["same_submission"]["count"] == 2, receipt
    assert [r["job"] for r in receipt["same_submission"]["evaluations"]][0] == older["id"]
    assert run(["verify", str(out / "receipt.json"), "--remote", remote.url]) == 0
    assert "proves" in capfd.readouterr().out
    keys = tmp_path / "keys.json"
    keys.write_text(remote.http.get("/v1/keys").text)
    assert run(["verify", str(out / "receipt.json"), "--key", str(keys)]) == 0
    capfd.readouterr()
    forged = json.dumps(receipt).replace(f'"label": "{default}"', '"label": "forged"')
    assert forged != json.dumps(receipt)
    (tmp_path / "forged.json").write_text(forged)
    assert run(["verify", str(tmp_path / "forged.json"), "--key", str(keys)]) == 1
    assert capfd.readouterr().err.count("\n") <= 1


def tar_digest_of(folder: Path, tmp_path: Path) -> str:
    """The digest of ``folder``'s files as any tar carries them (here a hand-made one)."""
    files: dict[str, str | bytes] = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    path = tmp_path / "hand.tar"
    path.write_bytes(make_tar(files))
    digest = tar_digest(path)
    assert re.fullmatch(r"[0-9a-f]{64}", digest)
    return digest
