"""``kcoral show ID``: an evaluation's receipt (what ran, on what, with which seeds) and its report.

For a job that is not an evaluation, the job's own details (as ``kcoral status``).
"""

from __future__ import annotations

import statistics
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from kcoral.cli.commands.common import JobIdArgument, JsonOption, RemoteOption, TokenOption, connect
from kcoral.cli.commands.eval_cmd import fetch_receipt, fetch_report
from kcoral.cli.output import emit_json, job_json, stdout
from kcoral.cli.render import fmt_time, job_details, state_text
from kcoral.runner.models import JobState, JobView


def _num(value: Any, digits: int = 4) -> str:
    return f"{value:.{digits}f}" if isinstance(value, int | float) and not isinstance(value, bool) else "-"


def _gpus(gpus: Any) -> list[str]:
    if not gpus:
        return ["none (CPU task)"]
    lines = []
    for g in gpus if isinstance(gpus, list) else []:
        if isinstance(g, dict):
            lines.append(
                f"{g.get('index', '?')}: {g.get('name', '?')} ({g.get('memory_total_mib', '?')} MiB) "
                f"{g.get('uuid', '')} driver {g.get('driver') or '-'}".rstrip()
            )
        else:
            lines.append(str(g))
    return lines


def _telemetry(telemetry: Any) -> list[str]:
    if not isinstance(telemetry, dict) or not telemetry:
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


def timing_line(samples: Any) -> str:
    """``n=19 median 3.873339 ms`` for a list of samples in ms."""
    values = [float(v) for v in samples or [] if isinstance(v, int | float)]
    if not values:
        return "no samples"
    return f"n={len(values)} median {statistics.median(values):.6f} ms"


def _timings(timings: Any) -> list[str]:
    if not isinstance(timings, dict) or not timings:
        return ["-"]
    lines = []
    for workload, sides in timings.items():
        sides = sides if isinstance(sides, dict) else {}
        lines.append(
            f"{workload}: baseline {timing_line(sides.get('baseline_ms'))}; "
            f"kernel {timing_line(sides.get('kernel_ms'))}; "
            f"protocol {timing_line(sides.get('protocol_ms'))} (raw call times, protocol included)"
        )
    return lines


def receipt_view(view: JobView, receipt: dict[str, Any] | None, report: dict[str, Any] | None) -> RenderableType:
    """The receipt as ``key  value`` rows (full digests), then the report lines."""
    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    rows: list[tuple[str, list[str]]] = [
        ("job", [view.id]),
        ("state", [state_text(view) + (f" ({view.reason})" if view.reason else "")]),
        ("finished", [fmt_time(view.times.finished)]),
    ]
    if receipt is None:
        rows.append(("receipt", ["none: the evaluation produced no receipt"]))
    else:
        version = receipt.get("task_version")
        rows += [
            (
                "task",
                [
                    str(receipt.get("task", getattr(view.spec, "task", "?")))
                    + (f" version {version}" if version else "")
                ],
            ),
            ("task sha256", [str(receipt.get("task_sha256") or "-")]),
            ("image", [str(receipt.get("image") or "-")]),
            ("submission sha256", [str(receipt.get("submission_sha256") or "-")]),
            ("harness version", [str(receipt.get("harness_version") or "-")]),
            ("gpus", _gpus(receipt.get("gpus"))),
            ("telemetry", _telemetry(receipt.get("telemetry"))),
            ("seed hashes", [f"{k}: {v}" for k, v in (receipt.get("seed_hashes") or {}).items()] or ["-"]),
            ("timings", _timings(receipt.get("timings"))),
        ]
    for key, values in rows:
        for i, value in enumerate(values):
            table.add_row(key if i == 0 else "", Text(value))
    parts: list[RenderableType] = [table, Text("")]
    lines = (report or {}).get("lines")
    if isinstance(lines, list) and lines:
        parts.append(Text("report:", style="bold"))
        parts += [Text(f"  {line}") for line in lines]
    else:
        parts.append(Text("report: none"))
    return Group(*parts)


def show(
    job_id: JobIdArgument, remote: RemoteOption = None, token: TokenOption = None, json: JsonOption = False
) -> None:
    """Show an evaluation's receipt and report (a python job: its details). Exit 0 whatever the verdict."""
    receipt = report = None
    with connect(remote, token) as client:
        view = client.status(job_id)
        is_eval = view.spec.kind == "eval"
        if is_eval and view.state == JobState.finished:
            parsed_receipt, parsed_report = fetch_receipt(client, view), fetch_report(client, view)
            receipt = parsed_receipt.document() if parsed_receipt is not None else None
            report = parsed_report.document() if parsed_report is not None else None
    if json:
        doc = job_json(view)
        if is_eval:
            doc = {"job": doc, "receipt": receipt, "report": report}
        emit_json(doc)
    elif is_eval and view.state == JobState.finished:
        stdout().print(receipt_view(view, receipt, report))
    else:
        stdout().print(job_details(view))
