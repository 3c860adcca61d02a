"""What the web page shows of evaluations as candidates: an evaluation's submission source and the
evaluations to compare it with, two evaluations compared (runner.comparison), a task's board
(runner.evaluations.board). The routes are runner.web's; this module makes their values.

Every text a submission chose (its files, the diff, labels) goes through protocol.printable here or in
the templates' autoescape, never into the page as it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kcoral.protocol.evaluations import Comparison, Evaluation
from kcoral.protocol.models import EvalSpec
from kcoral.protocol.printable import printable
from kcoral.runner.comparison import comparison
from kcoral.runner.evaluations import best_per_owner, evaluation_view, resolve
from kcoral.runner.store import JobRecord
from kcoral.runner.submissions import read_sources

if TYPE_CHECKING:
    from kcoral.runner.services import Services

#: a diff line's first character -> its class in the page (site.css)
DIFF_CLASSES = {"+": "add", "-": "del", "@": "hunk"}


def source_view(svc: Services, job: JobRecord) -> dict[str, Any]:
    """An evaluation's submission as its page shows it: each file's text (escaped) or why it is not
    shown; {} for a job that is not an evaluation."""
    if not isinstance(job.spec, EvalSpec):
        return {}
    sources = read_sources(svc.store.paths(job.id).tar, svc.settings.limits)
    files = [
        {
            "path": printable(f.path),
            "size": f.size,
            "text": printable(f.text, newlines=True) if f.text is not None else None,
            "note": printable(f.note),
        }
        for f in sources.files
    ]
    return {"files": files, "missing": sources.missing}


def compare_links(svc: Services, job: JobRecord) -> dict[str, str]:
    """The evaluations an evaluation's page offers to compare it with: its owner's previous evaluation
    of the task and the owner's best so far (each only where there is one, and it is another)."""
    spec = job.spec
    if not isinstance(spec, EvalSpec) or spec.calibration:
        return {}
    links: dict[str, str] = {}
    earlier = [j for j in svc.store.evaluations(spec.task, job.owner) if j.times.created < job.times.created]
    if earlier:
        links["previous"] = earlier[0].id
    best = best_per_owner(evaluation_view(j) for j in svc.store.scored_evaluations(spec.task, job.owner))
    if best and best[0].id != job.id:
        links["best"] = best[0].id
    return links


def compare_values(svc: Services, a: str, b: str, owner: str | None) -> dict[str, Any]:
    """The compare view's values: B against A (each an id, its start, or a label: ``owner``'s, or
    anyone's for an operator) and the diff as (class, escaped line) rows."""
    found = comparison(svc.store, svc.settings.limits, resolve(svc.store, a, owner), resolve(svc.store, b, owner))
    return {"c": found, "sides": _sides(found), "diff": diff_rows(found.diff.text)}


def _sides(c: Comparison) -> list[dict[str, Any]]:
    return [{"name": name, "e": e} for name, e in (("A", c.a), ("B", c.b))]


def diff_rows(text: str) -> list[tuple[str, str]]:
    """A unified diff's lines, each with its class and escaped (protocol.printable) for the page."""
    return [(DIFF_CLASSES.get(line[:1], ""), printable(line)) for line in text.splitlines()]


def title(e: Evaluation) -> str:
    """An evaluation on one line: its label (escaped) or its id."""
    return printable(e.label) if e.label else e.id
