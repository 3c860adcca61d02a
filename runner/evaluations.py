"""Evaluations as candidates: a token's history of a task with its best so far, each token's best (the
task's board, anonymised for a token on a public board), an evaluation named by id or label, and the
digest and score of evaluations finished before the store kept them (:func:`backfill`).

"Best" is protocol.evaluations.BEST_RULE, chosen by :func:`best_per_owner` and nowhere else.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from pathlib import Path

from kcoral.protocol.errors import BadRequest, KcoralError, NotFound
from kcoral.protocol.evaluations import Board, BoardEntry, Evaluation, History
from kcoral.protocol.jobids import JOB_ID
from kcoral.protocol.models import EvalSpec, Verdict
from kcoral.protocol.printable import printable
from kcoral.runner import jobfs
from kcoral.runner.auth import RESERVED_PREFIX
from kcoral.runner.store import JobRecord, JobStore
from kcoral.runner.submissions import submission_digest

log = logging.getLogger("kcoral.evaluations")

#: what may be a piece of a job id (its start, or the start of its random last part)
ID_PIECE = re.compile(r"[0-9a-f-]{1,26}")
#: the most of a report.json that is read for an older evaluation's score
REPORT_BYTES = 8 << 20

SCOPE_EVERY = "every token"
SCOPE_OWN = "your own (this server keeps the other tokens' private)"
SCOPE_PUBLIC = "your own, and the other tokens' anonymised (--public-board)"


def evaluation_view(job: JobRecord, best: str | None = None) -> Evaluation:
    """An evaluation job as a candidate; ``best``: the id of the best so far it is listed with."""
    spec = job.spec
    if not isinstance(spec, EvalSpec):
        raise BadRequest(f"job {job.id} is not an evaluation ({spec.kind})")
    return Evaluation(
        id=job.id,
        task=spec.task,
        label=spec.label,
        owner=job.owner,
        submission_digest=job.submission_digest,
        state=job.state,
        verdict=job.verdict,
        check=spec.check,
        score=job.score,
        image_digest=job.image.digest if job.image else "",
        gpu=", ".join(dict.fromkeys(g.name for g in job.gpus)) or job.slot,
        created=job.times.created,
        finished=job.times.finished,
        best=best is not None and job.id == best,
    )


def counts(e: Evaluation) -> bool:
    """Whether ``e`` may be a best at all: it passed (verdict ok), was timed (not a check) and has a score."""
    return e.verdict is Verdict.ok and not e.check and e.score is not None


def best_per_owner(evaluations: Iterable[Evaluation]) -> list[Evaluation]:
    """Each owner's best evaluation (BEST_RULE: the highest speedup of those that :func:`counts`; of
    equal ones, the first finished), best first (equal speedups: the one reached first)."""
    best: dict[str, Evaluation] = {}
    for e in sorted((e for e in evaluations if counts(e)), key=_when):
        assert e.score is not None
        held = best.get(e.owner)
        if held is None or e.score.speedup > _speedup(held):
            best[e.owner] = e
    return sorted(best.values(), key=lambda e: (-_speedup(e), _when(e)))


def _speedup(e: Evaluation) -> float:
    return e.score.speedup if e.score is not None else float("-inf")


def _when(e: Evaluation) -> tuple[float, float, str]:
    return (e.finished or e.created, e.created, e.id)


def history(store: JobStore, owner: str, task: str, limit: int) -> History:
    """``owner``'s newest ``limit`` evaluations of ``task``, the best so far (of all of them) marked."""
    listed = store.evaluations(task, owner, limit)
    total = len(listed) if len(listed) < limit else store.count_evaluations(task, owner)
    scored = best_per_owner(evaluation_view(j) for j in store.scored_evaluations(task, owner))
    best = scored[0] if scored else None
    best_id = best.id if best is not None else None
    if best is not None:
        best.best = True
    views = [evaluation_view(j, best_id) for j in listed]
    return History(task=task, best=best, evaluations=views, total=total)


def board(store: JobStore, task: str, viewer: str, operator: bool, public: bool) -> Board:
    """The best so far of each token on ``task``, best first: an operator's view shows every token's;
    a token's its own (ranked among all only on a public board) and, on a public board, the others'
    anonymised (rank, score and GPU). The server's own evaluations (warm-ups) are on no board."""
    everyone = (evaluation_view(j) for j in store.scored_evaluations(task) if not j.owner.startswith(RESERVED_PREFIX))
    entries = []
    for rank, e in enumerate(best_per_owner(everyone), 1):
        assert e.score is not None  # best_per_owner keeps scored ones only
        mine = e.owner == viewer
        e.best = True
        if operator or mine:
            shown = rank if operator or public else None
            entries.append(BoardEntry(rank=shown, owner=e.owner, mine=mine, score=e.score, gpu=e.gpu, evaluation=e))
        elif public:
            entries.append(BoardEntry(rank=rank, score=e.score, gpu=e.gpu))
    scope = SCOPE_EVERY if operator else SCOPE_PUBLIC if public else SCOPE_OWN
    return Board(task=task, scope=scope, entries=entries)


def known_task(store: JobStore, tasks_dir: Path | tuple[Path, ...], task: str, owner: str | None) -> None:
    """NotFound for a task this server has neither among its tasks nor in ``owner``'s evaluations."""
    from kcoral.tasks.registry import all_tasks

    if any(t.id == task for t in all_tasks(tasks_dir)):
        return
    if owner is not None and store.evaluations(task, owner, 1):
        return  # a task the server no longer offers: its history stays
    raise NotFound(f"no task {printable(task[:200])!r} on this server (kcoral tasks lists them)")


def resolve(store: JobStore, ref: str, owner: str | None) -> JobRecord:
    """The evaluation ``ref`` names, of ``owner`` (None: anyone's): a job id, a label (the newest
    evaluation so named), or an unambiguous start of a job id or of its random last part."""
    ref = ref.strip()
    if not ref:
        raise BadRequest("name an evaluation: its job id or its label")
    if JOB_ID.fullmatch(ref):
        try:
            job = store.get(ref)
        except NotFound:
            job = None
        if job is None or (owner is not None and job.owner != owner):
            raise NotFound(f"no job {ref}")
        if not isinstance(job.spec, EvalSpec):
            raise BadRequest(f"job {ref} is not an evaluation ({job.spec.kind} job): name an evaluation")
        return job
    named = store.find_evaluations(owner, label=ref)
    if named:
        return named[0]
    found = store.find_evaluations(owner, id_piece=ref) if ID_PIECE.fullmatch(ref) else []
    if len(found) == 1:
        return found[0]
    shown = printable(ref[:100])
    if found:
        ids = ", ".join(j.id for j in found[:3])
        raise BadRequest(f"{shown!r} starts the ids of {len(found)} evaluations ({ids}...): give more of the id")
    raise NotFound(f"no evaluation has the id or label {shown!r} (kcoral history TASK lists them)")


def backfill(store: JobStore) -> int:
    """Give the evaluations finished before the store kept them their submission digest (from the tar
    kept with them) and score (from their report.json); how many were updated."""
    from kcoral.tasks.documents import DocumentError, parse_report

    done = 0
    try:
        unscored = store.unscored_evaluations()
    except KcoralError as exc:  # the store closed meanwhile (a server that stopped at once)
        log.warning("cannot look for evaluations without a digest and score: %s", exc.message)
        return 0
    for job in unscored:
        paths = store.paths(job.id)
        try:
            digest = submission_digest(job.spec, paths.tar) if paths.tar.is_file() else ""
        except KcoralError:
            digest = ""
        score = job.score
        if score is None and "report.json" in {o.path for o in job.outputs}:
            try:
                score = parse_report(jobfs.read_file(paths.outputs, "report.json", REPORT_BYTES)).score
            except (OSError, DocumentError):
                score = None
        try:
            store.set_evaluation_facts(job.id, digest, score)
        except KcoralError as exc:
            log.warning("cannot keep the digest and score of evaluation %s: %s", job.id, exc.message)
            continue
        done += 1
    if done:
        log.info("%d evaluation(s) from before the store kept digests and scores now have them", done)
    return done
