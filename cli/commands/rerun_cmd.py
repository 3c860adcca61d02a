"""``kcoral rerun ID``: run a job's submission again (same image digest; for an evaluation, the same task
snapshot), follow the new job quietly, and print the old and new results side by side.

Exit status: the new job's, as ``kcoral eval`` (an evaluation) or ``kcoral python`` (any other job).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Group, RenderableType
from rich.table import Table

from kcoral.cli.commands.common import JobIdArgument, JsonOption, RemoteOption, TokenOption, connect
from kcoral.cli.commands.eval_cmd import EvalRun
from kcoral.cli.evaldocs import fetch
from kcoral.cli.output import emit_json, job_json, note, stdout
from kcoral.cli.render import cell, state_text
from kcoral.cli.runflow import PythonRun, RunOptions
from kcoral.protocol.models import JobState, JobView
from kcoral.tasks.documents import Document, EvalReport, Receipt, Summary, WorkloadRow
from kcoral.tasks.harness.stats import compare_intervals

#: receipt fields that a rerun must keep
PINNED = ("image", "task_sha256", "submission_sha256")


def _doc(document: Document | None) -> dict[str, Any] | None:
    """A parsed (so checked) report or receipt as the JSON object it came as, which --json prints."""
    return None if document is None else document.document()


def _num(value: float | None, fmt: str, unit: str = "") -> str:
    return "-" if value is None else format(value, fmt) + unit


def _rows(report: EvalReport | None) -> dict[str, WorkloadRow]:
    return {r.id: r for r in report.workloads} if report is not None else {}


def _figures(row: WorkloadRow | None) -> dict[str, Any]:
    if row is None:
        return {"verdict": None, "kernel_ms": None, "speedup": None}
    return {"verdict": row.verdict.value, "kernel_ms": row.kernel_ms, "speedup": row.speedup}


def compare(old: EvalReport | None, new: EvalReport | None) -> list[dict[str, Any]]:
    """One entry per workload id (old order, then ids only the new report has): verdict, kernel ms, speedup."""
    a, b = _rows(old), _rows(new)
    ids = list(a) + [i for i in b if i not in a]
    return [{"id": i, "old": _figures(a.get(i)), "new": _figures(b.get(i))} for i in ids]


def _summary(report: EvalReport | None) -> dict[str, Any]:
    return _doc(report.summary) or {} if report is not None else {}


def _ci(summary: Summary | None) -> str:
    if summary is None:
        return "-"
    return f"{summary.speedup:.4f}x [{summary.speedup_lo:.4f}, {summary.speedup_hi:.4f}]"


def _words(old: Summary | None, new: Summary | None) -> str:
    """The new score against the old in the words of a robust comparison (tasks.harness.stats)."""
    if old is None or new is None:
        return ""
    return f"; new against old: {compare_intervals(new.speedup_lo, new.speedup_hi, old.speedup_lo, old.speedup_hi)}"


def _job_line(label: str, view: JobView, receipt: Receipt | None) -> str:
    digest = (receipt.image if receipt else "") or (view.image.digest if view.image else "") or "-"
    return f"{label} job {view.id}: {state_text(view)}, image {digest}"


def _pinned_lines(old: Receipt | None, new: Receipt | None, old_view: JobView, new_view: JobView) -> list[str]:
    if old is None or new is None:  # not an evaluation, or one without receipt: the job views' images
        a = old_view.image.digest if old_view.image else ""
        b = new_view.image.digest if new_view.image else ""
        if a and b:
            return [f"image digests {'match' if a == b else 'DIFFER'}"]
        return []
    return [
        f"{name.replace('_', ' ')}s {'match' if getattr(old, name) == getattr(new, name) else 'DIFFER'}"
        for name in PINNED
    ]


@dataclass(frozen=True)
class Side:
    """One of the two jobs a rerun compares, with its evaluation documents where it has them."""

    view: JobView
    report: EvalReport | None = None
    receipt: Receipt | None = None

    def json(self) -> dict[str, Any]:
        return {"job": job_json(self.view), "report": _doc(self.report), "receipt": _doc(self.receipt)}


def comparison(old: Side, new: Side, code: int) -> dict[str, Any]:
    """What ``--json`` prints: both jobs and their documents, the workloads side by side, the pins."""
    return {
        "old": old.json(),
        "new": new.json(),
        "workloads": compare(old.report, new.report),
        "summary": {"old": _summary(old.report), "new": _summary(new.report)},
        "pinned": _pinned_lines(old.receipt, new.receipt, old.view, new.view),
        "exit_code": code,
    }


def comparison_view(old: Side, new: Side) -> RenderableType:
    parts: list[RenderableType] = [
        cell(_job_line("old", old.view, old.receipt)),
        cell(_job_line("new", new.view, new.receipt)),
    ]
    parts += [cell(line) for line in _pinned_lines(old.receipt, new.receipt, old.view, new.view)]
    if old.report is None and new.report is None:
        return Group(*parts)
    table = Table(box=None, header_style="bold", pad_edge=False)
    for column in (
        "WORKLOAD",
        "VERDICT OLD",
        "VERDICT NEW",
        "KERNEL MS OLD",
        "KERNEL MS NEW",
        "SPEEDUP OLD",
        "SPEEDUP NEW",
    ):
        table.add_column(column, no_wrap=True)
    table.add_row("holdout", _holdout(old.report), _holdout(new.report), "", "", "", "")
    a, b = _rows(old.report), _rows(new.report)
    for i in list(a) + [i for i in b if i not in a]:
        o, n = a.get(i), b.get(i)
        table.add_row(
            cell(i),
            o.verdict.value if o else "-",
            n.verdict.value if n else "-",
            _num(o.kernel_ms if o else None, ".6f"),
            _num(n.kernel_ms if n else None, ".6f"),
            _num(o.speedup if o else None, ".4f", "x"),
            _num(n.speedup if n else None, ".4f", "x"),
        )
    so = old.report.summary if old.report else None
    sn = new.report.summary if new.report else None
    table.add_row(
        "summary",
        _passed(old.report),
        _passed(new.report),
        _num(so.kernel_ms if so else None, ".6f"),
        _num(sn.kernel_ms if sn else None, ".6f"),
        _num(so.speedup if so else None, ".4f", "x"),
        _num(sn.speedup if sn else None, ".4f", "x"),
    )
    parts += [
        cell(""),
        table,
        cell(""),
        cell(f"summary speedup: old {_ci(so)}  new {_ci(sn)}  (95% CI){_words(so, sn)}"),
    ]
    for label, report in (("old", old.report), ("new", new.report)):
        for flag in report.flags if report else []:
            parts.append(cell(f"{label} flagged: {flag}"))
    return Group(*parts)


def _holdout(report: EvalReport | None) -> str:
    return report.holdout.value if report and report.holdout else "check" if report else "-"


def _passed(report: EvalReport | None) -> str:
    return f"passed {report.passed}/{report.total}" if report else "-"


def rerun(
    job_id: JobIdArgument,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="echo the new job's log on stderr")] = False,
    output_dir: Annotated[
        Path | None,
        typer.Option("--output-dir", "-o", help="where the new job's outputs go [default: ./kcoral-out/JOB_ID]"),
    ] = None,
    json: JsonOption = False,
    remote: RemoteOption = None,
    token: TokenOption = None,
) -> None:
    """Run job ID's submission again with the same image (and task snapshot); compare old and new results.

    Exit status: the new job's (an evaluation: 0 passed, 1 failed; 124 timeout, 130 cancelled...).
    """
    with connect(remote, token) as client:
        job_id = client.resolve(job_id)
        old_view = client.status(job_id)
        new_view = client.rerun(job_id)
        pinned = new_view.spec.image or "-"
        note(f"kcoral: rerun of job {old_view.id}: job {new_view.id} (image {pinned})")
        is_eval = new_view.spec.kind == "eval"
        options = RunOptions(
            spec=new_view.spec, send_dir=Path("."), output_dir=output_dir, log="stderr" if verbose else "none"
        )
        flow = EvalRun(client, options) if is_eval else PythonRun(client, options)
        code = flow.follow(new_view)
        new_view = client.status(new_view.id)
        if new_view.state != JobState.finished:  # interrupted: the flow has cancelled it
            raise typer.Exit(code)
        old_view = client.status(old_view.id)
        old = Side(old_view)
        if is_eval and old_view.state == JobState.finished:
            old = Side(old_view, fetch(EvalReport, client, old_view), fetch(Receipt, client, old_view))
    new = Side(new_view, flow.report, flow.receipt) if isinstance(flow, EvalRun) else Side(new_view)
    if json:
        emit_json(comparison(old, new, code))
    else:
        stdout().print(comparison_view(old, new))
    raise typer.Exit(code)
