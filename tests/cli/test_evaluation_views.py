"""What ``kcoral history``, ``compare``, ``best`` and ``jobs`` print of evaluations: the best marked,
scores with their intervals, B against A in words, and text a submission chose (its diff, its label)
escaped (protocol.printable), never written to the terminal as it is. Pure rendering."""

from __future__ import annotations

import io
import json

from rich.console import Console, RenderableType

from kcoral.cli.commands.best_cmd import board_table
from kcoral.cli.commands.compare_cmd import comparison_view
from kcoral.cli.commands.history_cmd import history_table
from kcoral.cli.render import jobs_table
from kcoral.protocol.evaluations import Board, BoardEntry, Comparison, Evaluation, History, SourceDiff
from kcoral.protocol.models import EvalSpec, JobState, JobTimes, JobView, Score, Verdict
from kcoral.runner.comparison import compare_scores

A = Score(speedup=1.0, speedup_lo=0.99, speedup_hi=1.01)
B = Score(speedup=1.2, speedup_lo=1.19, speedup_hi=1.21)


def shown(renderable: RenderableType) -> str:
    out = io.StringIO()
    Console(file=out, width=250, force_terminal=False).print(renderable)
    return out.getvalue()


def ev(job: str, label: str, score: Score | None, best: bool = False, digest: str = "a" * 64) -> Evaluation:
    return Evaluation(
        id=job,
        task="demo/softmax",
        label=label,
        owner="alice",
        submission_digest=digest,
        state=JobState.finished,
        verdict=Verdict.ok,
        score=score,
        created=1.0,
        finished=2.0,
        best=best,
    )


def test_the_history_marks_the_best_and_shows_each_score_with_its_interval() -> None:
    text = shown(history_table(History(task="demo/softmax", evaluations=[ev("j2", "v2", B, True), ev("j1", "v1", A)])))
    rows = [line.split() for line in text.splitlines()[1:]]
    assert rows[0][:4] == ["*", "j2", "v2", "ok"] and "1.2000x" in rows[0] and "[1.1900," in rows[0]
    assert rows[1][:3] == ["j1", "v1", "ok"]


def test_a_comparison_says_b_against_a_and_escapes_the_diff_and_labels() -> None:
    diff = SourceDiff(text="--- a/s.py\n+++ b/s.py\n@@ -1 +1 @@\n-x = 1\n+print('\x1b[2J\u202e')\n", changed=["s.py"])
    found = Comparison(
        a=ev("j1", "v1\u202e", A),
        b=ev("j2", "v2", B, digest="b" * 64),
        identical=False,
        summary=compare_scores("summary", A, B, "ok", "ok"),
        workloads=[compare_scores("standard", A, B, "PASS", "PASS")],
        diff=diff,
    )
    text = shown(comparison_view(found))
    assert "B against A: faster" in text and "+20.00%" in text
    assert "\x1b" not in text and "\u202e" not in text
    assert "+print('\\x1b[2J\\u202e')" in text and "v1\\u202e" in text


def test_identical_submissions_are_said_so_without_a_diff() -> None:
    same = Comparison(a=ev("j1", "v1", A), b=ev("j2", "v1", A), identical=True, summary=compare_scores("summary", A, A))
    text = shown(comparison_view(same))
    assert "identical submissions" in text and "---" not in text


def test_the_board_anonymises_as_the_server_sent() -> None:
    board = Board(
        task="demo/softmax",
        scope="yours",
        entries=[
            BoardEntry(rank=1, score=B, gpu="H200"),
            BoardEntry(rank=2, owner="alice", mine=True, score=A, evaluation=ev("j1", "v1", A)),
        ],
    )
    rows = [line.split() for line in shown(board_table(board)).splitlines()[1:]]
    assert rows[0][:3] == ["1", "(anonymous)", "-"] and rows[1][:4] == ["2", "alice", "(you)", "j1"]


def test_the_jobs_table_shows_an_evaluations_score() -> None:
    scored = JobView(
        id="j-eval",
        owner="o",
        state=JobState.finished,
        verdict=Verdict.ok,
        spec=EvalSpec(task="demo/softmax", label="v2"),
        times=JobTimes(created=2.0),
        score=B,
    )
    text = shown(jobs_table([scored]))
    assert "SCORE" in text and "1.2000x [1.1900, 1.2100]" in text and "eval demo/softmax --label v2" in text


def test_show_says_who_signed_the_receipt_and_how_many_evaluations_it_counts() -> None:
    from kcoral.cli.commands.show_cmd import receipt_view
    from kcoral.tasks.documents import parse_receipt

    view = JobView(id="j", owner="o", state=JobState.finished, spec=EvalSpec(task="t"), times=JobTimes(created=1.0))
    pins = {"job": "j", "task": "t", "task_sha256": "a", "image": "i", "submission_sha256": "s",
            "harness_version": "1", "finished": 2.0}  # fmt: skip
    assert "no (a server from before receipts were signed)" in shown(
        receipt_view(view, parse_receipt(json.dumps(pins)), None)
    )
    signed = {**pins, "server": "kcoral-1", "same_submission": {"count": 3, "evaluations": []},
              "signature": {"algorithm": "ed25519", "key_id": "0123456789abcdef", "value": ""}}  # fmt: skip
    text = shown(receipt_view(view, parse_receipt(json.dumps(signed)), None))
    assert "by key 0123456789abcdef of server kcoral-1; 3 evaluation(s) of this submission by this token" in text
