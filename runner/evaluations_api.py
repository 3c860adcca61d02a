"""HTTP routes of evaluations as candidates (runner.evaluations, runner.comparison): a token's history
of a task, two evaluations compared, and the best so far of each token. Thin, as runner.api's."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query, Request
from starlette.concurrency import run_in_threadpool

from kcoral.protocol.evaluations import Board, Comparison, History
from kcoral.runner.api import errors, owner, services
from kcoral.runner.comparison import comparison
from kcoral.runner.evaluations import board, history, known_task, resolve

router = APIRouter(prefix="/v1/evaluations")

#: the most evaluations one history answer lists
MAX_HISTORY = 500

#: the parameters' descriptions (each route makes its own Query: FastAPI keeps a parameter's name in it)
TASK = "the task id, e.g. demo/softmax"
REF = "an evaluation: its job id (or an unambiguous start of it), or its label (the newest so named)"


@router.get("", responses=errors(404))
def list_history(
    request: Request,
    task: str = Query(..., min_length=1, max_length=200, description=TASK),
    limit: int = Query(20, ge=1, le=MAX_HISTORY, description="the newest this many"),
    who: str = Depends(owner),
) -> History:
    """Your evaluations of a task, newest first: label, submission digest, verdict, speedup with its
    interval, image digest, GPU and times, with the best so far marked (protocol.evaluations.BEST_RULE)."""
    svc = services(request)
    known_task(svc.store, services(request).settings.tasks_dirs, task, who)
    return history(svc.store, who, task, limit)


@router.get("/compare", responses=errors(404))
async def compare(
    request: Request,
    a: str = Query(..., min_length=1, max_length=200, description=f"A, {REF}"),
    b: str = Query(..., min_length=1, max_length=200, description=f"B, compared against A: {REF}"),
    who: str = Depends(owner),
) -> Comparison:
    """Evaluation B against evaluation A (each a job id, its start, or a label: the newest so named):
    per workload both speedups with their intervals and B against A in the words of a robust comparison
    (faster, slower, same, ambiguous: from the intervals), whether the submissions are identical, and
    the unified diff of their sources (capped)."""
    svc = services(request)
    first, second = resolve(svc.store, a, who), resolve(svc.store, b, who)
    return await run_in_threadpool(comparison, svc.store, svc.settings.limits, first, second)


@router.get("/best", responses=errors(404))
def best(
    request: Request, task: str = Query(..., min_length=1, max_length=200, description=TASK), who: str = Depends(owner)
) -> Board:
    """The best so far of each token on a task, best first: an operator sees every token's; a token its
    own and, where the server runs with --public-board, the others' anonymised ranks."""
    svc = services(request)
    known_task(svc.store, services(request).settings.tasks_dirs, task, who)
    return board(svc.store, task, who, svc.auth.is_operator(who), svc.settings.public_board)
