"""``kcoral tasks``: the evaluation tasks the server offers (``kcoral eval TASK DIR`` runs one)."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table

from kcoral.cli.commands.common import JsonOption, RemoteOption, TokenOption, connect
from kcoral.cli.output import emit_json, stdout
from kcoral.cli.render import cell, fmt_duration


def _names(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def tasks_view(tasks: list[dict[str, Any]]) -> RenderableType:
    """A table of the tasks, then each task's description and contract."""
    if not tasks:
        return cell("no tasks on this server")
    table = Table(box=None, header_style="bold", pad_edge=False)
    for column in ("ID", "VERSION", "DEVICE", "WORKLOADS", "TIMED", "HOLDOUT", "TIMEOUT"):
        table.add_column(column, no_wrap=True)
    for t in sorted(tasks, key=lambda t: str(t.get("id", ""))):
        timeout = t.get("timeout_s")
        table.add_row(
            cell(str(t.get("id", "?"))),
            cell(str(t.get("version") or "-")),
            cell(str(t.get("device") or "-")),
            str(len(_names(t.get("workloads")))),
            cell(", ".join(_names(t.get("timed"))) or "-"),
            str(t.get("holdout_probes", "-")),
            fmt_duration(float(timeout)) if isinstance(timeout, int | float) else "-",
        )
    parts: list[RenderableType] = [table]
    for t in sorted(tasks, key=lambda t: str(t.get("id", ""))):
        parts.append(cell(""))
        parts.append(cell(str(t.get("id", "?")), style="bold"))
        if t.get("description"):
            parts.append(cell(f"  {t['description']}"))
        workloads = _names(t.get("workloads"))
        if workloads:
            parts.append(cell(f"  workloads: {', '.join(workloads)}"))
        if t.get("contract"):
            parts.append(cell(f"  contract: {t['contract']}"))
    return Group(*parts)


def tasks(remote: RemoteOption = None, token: TokenOption = None, json: JsonOption = False) -> None:
    """List the evaluation tasks: id, version, device, workloads, holdout probes, time limit, contract."""
    with connect(remote, token) as client:
        found = client.tasks()
    if json:
        emit_json(found)
    else:
        stdout().print(tasks_view(found))
