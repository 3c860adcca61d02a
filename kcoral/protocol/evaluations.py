"""What the API says of evaluations as candidates: a token's history of a task (``GET
/v1/evaluations``), two evaluations compared (``GET /v1/evaluations/compare``) and the best so far of
each token (``GET /v1/evaluations/best``). The server builds them (runner.evaluations,
runner.comparison); ``kcoral history``, ``compare`` and ``best`` show them. Plain dataclasses, as
:mod:`kcoral.protocol.models`, parsed by its :func:`~kcoral.protocol.typeddata.from_data`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kcoral.protocol.models import JobState, Score, Verdict

#: what "best" means, wherever a best is shown
BEST_RULE = (
    "best: the highest speedup of a passing timed evaluation (verdict ok: holdout, every workload "
    "and every check passed, timing conclusive); checks (--check) and failed evaluations never count"
)

#: the words of a robust comparison (tasks.harness.stats.compare_intervals): B against A
COMPARISON_WORDS = ("faster", "slower", "same", "ambiguous")


@dataclass(kw_only=True)
class Evaluation:
    """One evaluation as a candidate: its name, what was sent, how it ended and its score."""

    #: the job id
    id: str
    task: str
    #: the candidate's name (``kcoral eval --label``); "" when none was given
    label: str = ""
    owner: str
    #: sha256 over the files the server received, whatever their order (kcoral.protocol.submission)
    submission_digest: str = ""
    state: JobState
    verdict: Verdict | None = None
    #: a check (``--check``): correctness only, never a score
    check: bool = False
    score: Score | None = None
    #: the image the evaluation ran in
    image_digest: str = ""
    #: the GPU(s) it ran on by name, or the CPU slot(s) where it had none
    gpu: str = ""
    created: float
    finished: float | None = None
    #: the best so far among the evaluations it is listed with (:data:`BEST_RULE`)
    best: bool = False


@dataclass(kw_only=True)
class History:
    """A token's evaluations of one task, newest first (GET /v1/evaluations)."""

    task: str
    #: what "best" means
    best_rule: str = BEST_RULE
    #: the best so far of all the token's evaluations of the task (not only those listed); None: none passed
    best: Evaluation | None = None
    evaluations: list[Evaluation] = field(default_factory=list)
    #: the token's evaluations of the task in all (more than listed: ask with a larger limit)
    total: int = 0


@dataclass(kw_only=True)
class WorkloadComparison:
    """One workload of two evaluations: each one's verdict and speedup with its interval, and B against A."""

    id: str
    a_verdict: str = ""
    b_verdict: str = ""
    a: Score | None = None
    b: Score | None = None
    #: B's speedup over A's, less 1 (+0.05: B 5% faster), from the point values: a size, not a verdict
    delta: float | None = None
    #: B against A in the words of a robust comparison, from the two intervals (never from the point
    #: values alone): faster, slower, same or ambiguous; "" where either has no interval
    verdict: str = ""


@dataclass(kw_only=True)
class SourceDiff:
    """A unified diff of two submissions' text files, as kept with their jobs."""

    #: the unified diff (text as the submissions hold it: escape it before showing it)
    text: str = ""
    #: the files that differ (added, removed or changed)
    changed: list[str] = field(default_factory=list)
    #: the diff was cut at the server's cap (limits.diff_bytes)
    truncated: bool = False
    #: files left out of the diff and why (not text, over the size cap)
    skipped: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class Comparison:
    """Two evaluations side by side (GET /v1/evaluations/compare): B against A."""

    a: Evaluation
    b: Evaluation
    #: the two submissions' digests match: the same files were sent
    identical: bool
    #: the scores (the geometric means): B against A, as each workload's
    summary: WorkloadComparison
    workloads: list[WorkloadComparison] = field(default_factory=list)
    diff: SourceDiff = field(default_factory=SourceDiff)


@dataclass(kw_only=True)
class BoardEntry:
    """One token's best evaluation of a task. Another token's, shown to a token on a public board, is
    anonymised: its rank, score and GPU only."""

    #: 1 for the highest speedup; None where ranks are not shown (a token's own, no public board)
    rank: int | None = None
    #: the token's name; "" when anonymised
    owner: str = ""
    #: the caller's own
    mine: bool = False
    score: Score
    gpu: str = ""
    #: the evaluation itself; None when anonymised
    evaluation: Evaluation | None = None


@dataclass(kw_only=True)
class Board:
    """The best so far of each token on one task (GET /v1/evaluations/best), best first."""

    task: str
    best_rule: str = BEST_RULE
    #: whose entries are shown: "every token" (an operator), "your own" or "your own, and the others'
    #: anonymised" (the server runs with --public-board)
    scope: str = ""
    entries: list[BoardEntry] = field(default_factory=list)
