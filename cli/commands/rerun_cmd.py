"""``kcoral rerun ID``: run a job's submission again (same image digest; for an evaluation, the same task
snapshot), follow the new job quietly, and print the old and new results side by side.

Exit status: the new job's, as ``kcoral eval`` (an evaluation) or ``kcoral python`` (any other job).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Group, RenderableType
from rich.table import Table

from kcoral.cli.commands.common import JobIdArgument, JsonOption, RemoteOption, TokenOption, connect
from kcoral.cli.commands.eval_cmd import EvalRun, fetch_receipt, fetch_report
from kcoral.cli.output import emit_json, job_json, note, stdout
from kcoral.cli.render import cell, state_text
from kcoral.cli.runflow import PythonRun, RunOptions
from kcoral.runner.models import JobState, JobView
from kcoral.tasks.documents import EvalReport, Receipt

#: receipt fields that a rerun must keep
PINNED = ("image", "task_sha256", "submission_sha256")


def _doc(document: EvalReport | Receipt | None) -> dict[str, Any] | None:
    """A parsed (so checked) report or receipt as the JSON object it came as, which --json prints."""
    return None if document is None else document.document()


def _num(value: Any, fmt: str) -> str:
    return format(value, fmt) if isinstance(value, int | float) and not isinstance(value, bool) else "-"


def _rows(report: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    rows = (report or {}).get("workloads") or []
    return {str(r.get("id")): r for r in rows if isinstance(r, dict)}


def compare(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[dict[str, Any]]:
    """One entry per workload id (old order, then ids only the new report has): verdict, kernel ms, speedup."""
    a, b = _rows(old), _rows(new)
    ids = list(a) + [i for i in b if i not in a]
    fields = ("verdict", "kernel_ms", "speedup")
    return [
        {"id": i, "old": {f: a.get(i, {}).get(f) for f in fields}, "new": {f: b.get(i, {}).get(f) for f in fields}}
        for i in ids
    ]


def _summary(report: dict[str, Any] | None) -> dict[str, Any]:
    s = (report or {}).get("summary")
    return s if isinstance(s, dict) else {}


def _ci(summary: dict[str, Any]) -> str:
    if "speedup" not in summary:
        return "-"
    return (
        f"{_num(summary.get('speedup'), '.4f')}x "
        f"[{_num(summary.get('speedup_lo'), '.4f')}, {_num(summary.get('speedup_hi'), '.4f')}]"
    )


def _job_line(label: str, view: JobView, receipt: dict[str, Any] | None) -> str:
    digest = (receipt or {}).get("image") or (view.image.digest if view.image else "") or "-"
    return f"{label} job {view.id}: {state_text(view)}, image {digest}"


def _pinned_lines(
    old: dict[str, Any] | None, new: dict[str, Any] | None, old_view: JobView, new_view: JobView
) -> list[str]:
    if old is None or new is None:  # not an evaluation, or one without receipt: the job views' images
        a = old_view.image.digest if old_view.image else ""
        b = new_view.image.digest if new_view.image else ""
        if a and b:
            return [f"image digests {'match' if a == b else 'DIFFER'}"]
        return []
    return [f"{name.replace('_', ' ')}s {'match' if old.get(name) == new.get(name) else 'DIFFER'}" for name in PINNED]


def comparison_view(doc: dict[str, Any], old_view: JobView, new_view: JobView) -> RenderableType:
    parts: list[RenderableType] = [
        cell(_job_line("old", old_view, doc["old"]["receipt"])),
        cell(_job_line("new", new_view, doc["new"]["receipt"])),
    ]
    parts += [cell(line) for line in doc["pinned"]]
    old_report, new_report = doc["old"]["report"], doc["new"]["report"]
    if old_report is None and new_report is None:
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
    table.add_row(
        "holdout",
        str((old_report or {}).get("holdout", "-")),
        str((new_report or {}).get("holdout", "-")),
        "",
        "",
        "",
        "",
    )
    for row in doc["workloads"]:
        o, n = row["old"], row["new"]
        table.add_row(
            cell(row["id"]),
            str(o["verdict"] or "-"),
            str(n["verdict"] or "-"),
            _num(o["kernel_ms"], ".6f"),
            _num(n["kernel_ms"], ".6f"),
            _num(o["speedup"], ".4f") + ("x" if o["speedup"] is not None else ""),
            _num(n["speedup"], ".4f") + ("x" if n["speedup"] is not None else ""),
        )
    so, sn = doc["summary"]["old"], doc["summary"]["new"]
    table.add_row(
        "summary",
        _passed(old_report),
        _passed(new_report),
        _num(so.get("kernel_ms"), ".6f"),
        _num(sn.get("kernel_ms"), ".6f"),
        _num(so.get("speedup"), ".4f") + ("x" if so else ""),
        _num(sn.get("speedup"), ".4f") + ("x" if sn else ""),
    )
    parts += [cell(""), table, cell(""), cell(f"summary speedup: old {_ci(so)}  new {_ci(sn)}  (95% CI)")]
    for label, report in (("old", old_report), ("new", new_report)):
        for flag in (report or {}).get("flags") or []:
            parts.append(cell(f"{label} flagged: {flag}"))
    return Group(*parts)


def _passed(report: dict[str, Any] | None) -> str:
    if not report:
        return "-"
    return f"passed {report.get('passed', '?')}/{report.get('total', '?')}"


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
        old_report = old_receipt = None
        if is_eval and old_view.state == JobState.finished:
            old_report = _doc(fetch_report(client, old_view))
            old_receipt = _doc(fetch_receipt(client, old_view))
    new_report = _doc(flow.report) if isinstance(flow, EvalRun) else None
    new_receipt = _doc(flow.receipt) if isinstance(flow, EvalRun) else None
    doc: dict[str, Any] = {
        "old": {"job": job_json(old_view), "report": old_report, "receipt": old_receipt},
        "new": {"job": job_json(new_view), "report": new_report, "receipt": new_receipt},
        "workloads": compare(old_report, new_report),
        "summary": {"old": _summary(old_report), "new": _summary(new_report)},
        "pinned": _pinned_lines(old_receipt, new_receipt, old_view, new_view),
        "exit_code": code,
    }
    if json:
        emit_json(doc)
    else:
        stdout().print(comparison_view(doc, old_view, new_view))
    raise typer.Exit(code)
