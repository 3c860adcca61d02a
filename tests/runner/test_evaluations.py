"""Evaluations as candidates (runner.evaluations): the best so far (the highest speedup of a passing
timed evaluation, never a check's or a failed one's), a token's history with it marked, each token's
board (an operator's, a token's own, a public board's anonymised ranks), and an evaluation named by
id, label or a piece of its id. The selection is pure; the rest on a real SQLite store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kcoral.protocol.errors import BadRequest, NotFound
from kcoral.protocol.evaluations import Evaluation
from kcoral.protocol.models import EvalSpec, JobState, PythonSpec, Score, Verdict
from kcoral.runner.evaluations import SCOPE_EVERY, SCOPE_OWN, SCOPE_PUBLIC, best_per_owner, board, history, resolve
from kcoral.runner.store import JobStore

TASK = "demo/softmax"


def ev(
    job: str,
    speedup: float | None,
    owner: str = "alice",
    verdict: Verdict = Verdict.ok,
    check: bool = False,
    finished: float = 0.0,
) -> Evaluation:
    score = None if speedup is None else Score(speedup=speedup, speedup_lo=speedup * 0.99, speedup_hi=speedup * 1.01)
    return Evaluation(
        id=job,
        task=TASK,
        owner=owner,
        state=JobState.finished,
        verdict=verdict,
        check=check,
        score=score,
        created=finished,
        finished=finished,
    )


def test_the_best_is_the_highest_speedup_of_a_passing_timed_evaluation() -> None:
    candidates = [
        ev("ok-low", 1.10, finished=1),
        ev("rejected", 9.0, verdict=Verdict.rejected, finished=2),
        ev("inconclusive", 8.0, verdict=Verdict.inconclusive, finished=3),
        ev("check", 7.0, check=True, finished=4),
        ev("unscored", None, finished=5),
        ev("ok-high", 1.30, finished=6),
        ev("ok-mid", 1.20, finished=7),
    ]
    assert [e.id for e in best_per_owner(candidates)] == ["ok-high"]
    assert best_per_owner([c for c in candidates if not c.id.startswith("ok")]) == []


def test_of_equal_speedups_the_first_reached_stays_best_and_each_owner_has_one() -> None:
    found = best_per_owner(
        [
            ev("b-late", 1.5, owner="bob", finished=9),
            ev("a-second", 1.2, finished=5),
            ev("a-first", 1.2, finished=2),
            ev("b-early", 1.5, owner="bob", finished=3),
            ev("c", 0.9, owner="carol", finished=1),
        ]
    )
    assert [(e.owner, e.id) for e in found] == [("bob", "b-early"), ("alice", "a-first"), ("carol", "c")]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[JobStore]:
    s = JobStore(tmp_path)
    yield s
    s.close()


def finished(
    store: JobStore,
    owner: str,
    speedup: float | None,
    label: str = "",
    verdict: Verdict = Verdict.ok,
    check: bool = False,
    task: str = TASK,
    digest: str = "d" * 64,
) -> str:
    job = store.create(owner, EvalSpec(task=task, label=label, check=check))
    store.mark_queued(job.id, "t" * 64, 10, digest)
    score = None if speedup is None else Score(speedup=speedup, speedup_lo=speedup - 0.01, speedup_hi=speedup + 0.01)
    store.finish(job.id, verdict, score=score)
    return job.id


def test_a_history_is_newest_first_with_the_best_of_all_marked(store: JobStore) -> None:
    best = finished(store, "alice", 1.5, "fast")
    older = [finished(store, "alice", 1.1, f"c{i}") for i in range(3)]
    check = finished(store, "alice", None, "check", check=True)
    finished(store, "bob", 9.0, "bobs")
    finished(store, "alice", 5.0, "other task", task="demo/other")
    found = history(store, "alice", TASK, 3)
    assert [e.id for e in found.evaluations] == [check, older[2], older[1]]
    assert found.total == 5 and not any(e.best for e in found.evaluations)
    assert found.best is not None and found.best.id == best and found.best.label == "fast"
    everything = history(store, "alice", TASK, 10)
    assert [e.id for e in everything.evaluations if e.best] == [best]
    assert everything.evaluations[0].check and everything.evaluations[0].score is None
    assert history(store, "nobody", TASK, 5).evaluations == []


def test_the_board_shows_whom_the_viewer_may_see(store: JobStore) -> None:
    finished(store, "alice", 1.2)
    bob = finished(store, "bob", 1.5, "bobs best")
    finished(store, "kcoral:warm-up", 3.0)  # the server's own: on no board
    every = board(store, TASK, "ops", operator=True, public=False)
    assert every.scope == SCOPE_EVERY
    assert [(x.rank, x.owner) for x in every.entries] == [(1, "bob"), (2, "alice")]
    own = board(store, TASK, "alice", operator=False, public=False)
    assert own.scope == SCOPE_OWN and [(x.rank, x.owner, x.mine) for x in own.entries] == [(None, "alice", True)]
    public = board(store, TASK, "alice", operator=False, public=True)
    assert public.scope == SCOPE_PUBLIC
    assert [(x.rank, x.owner, x.mine) for x in public.entries] == [(1, "", False), (2, "alice", True)]
    anonymous = public.entries[0]
    assert anonymous.evaluation is None and anonymous.score.speedup == 1.5
    assert bob not in repr(anonymous) and "bobs best" not in repr(anonymous)


def test_an_evaluation_is_named_by_id_label_or_a_piece_of_its_id(store: JobStore) -> None:
    first = finished(store, "alice", 1.1, "v1")
    second = finished(store, "alice", 1.2, "v1")  # the same label again: the newest is meant
    bobs = finished(store, "bob", 1.3, "v9")
    python = store.create("alice", PythonSpec(argv=["m.py"])).id
    assert resolve(store, first, "alice").id == first
    assert resolve(store, "v1", "alice").id == second
    assert resolve(store, second.rsplit("-", 1)[1][:6], "alice").id == second
    assert resolve(store, "v9", None).id == bobs  # an operator's: anyone's
    with pytest.raises(NotFound):
        resolve(store, bobs, "alice")  # another token's, by id: as if there were none
    with pytest.raises(NotFound, match="no evaluation has the id or label 'v9'"):
        resolve(store, "v9", "alice")
    with pytest.raises(BadRequest, match="not an evaluation"):
        resolve(store, python, "alice")
    with pytest.raises(BadRequest, match="starts the ids of 2 evaluations"):
        resolve(store, first[:8], "alice")
