"""``kcoral show ID``: an evaluation's receipt (what ran, on what, with which seeds) and its report.

For a job that is not an evaluation, the job's own details (as ``kcoral status``).
"""

from __future__ import annotations

import statistics
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table

from kcoral.cli.commands.common import JobIdArgument, JsonOption, RemoteOption, TokenOption, connect
from kcoral.cli.evaldocs import fetch
from kcoral.cli.output import emit_json, job_json, stdout
from kcoral.cli.render import cell, fmt_phases, fmt_time, job_details, state_text
from kcoral.protocol.models import JobState, JobView
from kcoral.tasks.documents import EvalReport, Receipt, SampleTimes


def _num(value: Any, digits: int = 4) -> str:
    return f"{value:.{digits}f}" if isinstance(value, int | float) and not isinstance(value, bool) else "-"


def _gpus(gpus: list[dict[str, Any]]) -> list[str]:
    if not gpus:
        return ["none (CPU task)"]
    return [
        f"{g.get('index', '?')}: {g.get('name', '?')} ({g.get('memory_total_mib', '?')} MiB) "
        f"{g.get('uuid', '')} driver {g.get('driver') or '-'}".rstrip()
        for g in gpus
    ]


def _telemetry(telemetry: dict[str, Any]) -> list[str]:
    if not telemetry:
        return ["-"]
    lines = []
    for key, value in telemetry.items():
        if isinstance(value, dict):
            lines.append(
                f"{key}: median {_num(value.get('median'), 1)} "
                f"(min {_num(value.get('min'), 1)}, max {_num(value.get('max'), 1)})"
            )
        else:
            lines.append(f"{key}: {value}")
    return lines


def timing_line(samples: list[float] | None) -> str:
    """``n=19 median 3.873339 ms`` for a list of samples in ms."""
    if not samples:
        return "no samples"
    return f"n={len(samples)} median {statistics.median(samples):.6f} ms"


def _timings(timings: dict[str, SampleTimes]) -> list[str]:
    return [
        f"{workload}: baseline {timing_line(s.baseline_ms)}; kernel {timing_line(s.kernel_ms)}; "
        f"protocol {timing_line(s.protocol_ms)} (raw call times, protocol included)"
        for workload, s in timings.items()
    ] or ["-"]


def _signed(receipt: Receipt) -> str:
    """Who signed the receipt, and how many evaluations of its submission it counts (kcoral verify checks it)."""
    if not receipt.signature:
        return "no (a server from before receipts were signed)"
    same = receipt.same_submission
    counted = f"; {same.count} evaluation(s) of this submission by this token when signed" if same else ""
    return f"by key {receipt.signature.get('key_id', '?')} of server {receipt.server or '?'}{counted}"


def receipt_view(view: JobView, receipt: Receipt | None, report: EvalReport | None) -> RenderableType:
    """The receipt as ``key  value`` rows (full digests), then the report lines."""
    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    rows: list[tuple[str, list[str]]] = [
        ("job", [view.id]),
        ("state", [state_text(view) + (f" ({view.reason})" if view.reason else "")]),
        ("finished", [fmt_time(view.times.finished)]),
        ("phases", [fmt_phases(view.times.phases) or "-"]),
    ]
    if receipt is None:
        rows.append(("receipt", ["none: the evaluation produced no receipt"]))
    else:
        version = f" version {receipt.task_version}" if receipt.task_version else ""
        rows += [
            ("task", [receipt.task + version]),
            ("task sha256", [receipt.task_sha256 or "-"]),
            ("image", [receipt.image or "-"]),
            ("submission sha256", [receipt.submission_sha256 or "-"]),
            ("harness version", [receipt.harness_version or "-"]),
            ("gpus", _gpus(receipt.gpus)),
            ("telemetry", _telemetry(receipt.telemetry)),
            ("seed hashes", [f"{k}: {v}" for k, v in receipt.seed_hashes.items()] or ["-"]),
            ("timings", _timings(receipt.timings)),
            ("signed", [_signed(receipt)]),
        ]
    for key, values in rows:
        for i, value in enumerate(values):
            table.add_row(key if i == 0 else "", cell(value))
    parts: list[RenderableType] = [table, cell("")]
    if report is not None and report.lines:
        parts.append(cell("report:", style="bold"))
        parts += [cell(f"  {line}") for line in report.lines]
    else:
        parts.append(cell("report: none"))
    return Group(*parts)


def show(
    job_id: JobIdArgument, remote: RemoteOption = None, token: TokenOption = None, json: JsonOption = False
) -> None:
    """Show an evaluation's receipt and report (a python job: its details). Exit 0 whatever the verdict."""
    receipt: Receipt | None = None
    report: EvalReport | None = None
    with connect(remote, token) as client:
        job_id = client.resolve(job_id)
        view = client.status(job_id)
        is_eval = view.spec.kind == "eval"
        if is_eval and view.state == JobState.finished:
            receipt, report = fetch(Receipt, client, view), fetch(EvalReport, client, view)
    if json:
        doc = job_json(view)
        if is_eval:
            doc = {
                "job": doc,
                "receipt": receipt.document() if receipt is not None else None,
                "report": report.document() if report is not None else None,
            }
        emit_json(doc)
    elif is_eval and view.state == JobState.finished:
        stdout().print(receipt_view(view, receipt, report))
    else:
        stdout().print(job_details(view))
