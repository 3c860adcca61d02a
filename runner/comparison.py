"""Two evaluations compared (``GET /v1/evaluations/compare``, the web page's compare view): per workload
both speedups with their intervals and B against A in the words of a robust comparison
(tasks.harness.stats.compare_intervals: from the intervals, never from the point values alone), the
scores likewise, whether the same files were sent, and the unified diff of the two submissions."""

from __future__ import annotations

from kcoral.protocol.evaluations import Comparison, WorkloadComparison
from kcoral.protocol.models import Score
from kcoral.runner import jobfs
from kcoral.runner.evaluations import REPORT_BYTES, evaluation_view
from kcoral.runner.limits import Limits
from kcoral.runner.store import JobRecord, JobStore
from kcoral.runner.submissions import read_sources, source_diff
from kcoral.tasks.documents import DocumentError, EvalReport, WorkloadRow, parse_report
from kcoral.tasks.harness.stats import compare_intervals


def compare_scores(
    workload: str, a: Score | None, b: Score | None, a_verdict: str = "", b_verdict: str = ""
) -> WorkloadComparison:
    """B against A on one workload (or the scores): the delta of the point values, and the verdict
    words from the two intervals ("" where either side has none)."""
    delta = b.speedup / a.speedup - 1 if a is not None and b is not None and a.speedup > 0 else None
    words = compare_intervals(b.speedup_lo, b.speedup_hi, a.speedup_lo, a.speedup_hi) if a and b else ""
    return WorkloadComparison(
        id=workload, a_verdict=a_verdict, b_verdict=b_verdict, a=a, b=b, delta=delta, verdict=words
    )


def report_of(store: JobStore, job: JobRecord) -> EvalReport | None:
    """An evaluation's report.json as its server wrote it; None when it has none (yet) or it does not parse."""
    if EvalReport.FILE not in {o.path for o in job.outputs}:
        return None
    try:
        return parse_report(jobfs.read_file(store.paths(job.id).outputs, EvalReport.FILE, REPORT_BYTES))
    except (OSError, DocumentError):
        return None


def _rows(report: EvalReport | None) -> dict[str, WorkloadRow]:
    return {r.id: r for r in report.workloads} if report is not None else {}


def _row_score(row: WorkloadRow | None) -> Score | None:
    if row is None or row.speedup is None or row.speedup_lo is None or row.speedup_hi is None:
        return None
    return Score(speedup=row.speedup, speedup_lo=row.speedup_lo, speedup_hi=row.speedup_hi)


def comparison(store: JobStore, limits: Limits, a: JobRecord, b: JobRecord) -> Comparison:
    """Evaluation B against evaluation A."""
    first, second = evaluation_view(a), evaluation_view(b)
    rows_a, rows_b = _rows(report_of(store, a)), _rows(report_of(store, b))
    workloads = [
        compare_scores(
            w,
            _row_score(rows_a.get(w)),
            _row_score(rows_b.get(w)),
            rows_a[w].verdict.value if w in rows_a else "",
            rows_b[w].verdict.value if w in rows_b else "",
        )
        for w in [*rows_a, *(w for w in rows_b if w not in rows_a)]
    ]
    summary = compare_scores(
        "summary", first.score, second.score, str(first.verdict or first.state), str(second.verdict or second.state)
    )
    identical = bool(first.submission_digest) and first.submission_digest == second.submission_digest
    diff = source_diff(
        read_sources(store.paths(a.id).tar, limits), read_sources(store.paths(b.id).tar, limits), limits.diff_bytes
    )
    return Comparison(a=first, b=second, identical=identical, summary=summary, workloads=workloads, diff=diff)
