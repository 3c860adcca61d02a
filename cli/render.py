"""Human-readable views (rich renderables and one-line summaries) of jobs and of the server's health."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from kcoral.protocol.models import JobView, Score
from kcoral.protocol.printable import printable

if TYPE_CHECKING:  # rich is imported by what draws, not by the one-line summaries every job prints
    from rich.console import RenderableType
    from rich.table import Table
    from rich.text import Text


def cell(value: str, **style: Any) -> Text:
    """Server- or job-chosen text for the terminal: control characters shown as \\xNN (protocol.printable),
    never taken as markup. Every table cell and line of text the CLI renders goes through here."""
    from rich.text import Text

    return Text(printable(value, newlines=True), **style)


def short_digest(digest: str, length: int = 12) -> str:
    """``sha256:0123...`` -> ``sha256:0123456789ab``."""
    algo, sep, hexpart = digest.partition(":")
    return f"{algo}:{hexpart[:length]}" if sep else digest[:length]


def fmt_phases(phases: dict[str, float]) -> str:
    """``upload 0.1s, queue 0.0s, start 0.3s, job 1.2s, collect 0.0s``."""
    return ", ".join(f"{name} {fmt_duration(seconds)}" for name, seconds in phases.items())


def fmt_duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


def fmt_time(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "-"


def run_time(view: JobView) -> float | None:
    started, finished = view.times.started, view.times.finished
    if started is None:
        return None
    return (finished if finished is not None else time.time()) - started


def fmt_argv(view: JobView, limit: int = 60) -> str:
    """The command on one line (newlines in -c code shown as ``\\n``), cut at ``limit`` characters."""
    text = view.spec.title().replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def state_text(view: JobView) -> str:
    """``queued (#3)``, ``running``, ``ok``, ``exit 1``, ``timeout``..."""
    if view.state == "queued" and view.queue_position is not None:
        return f"queued (#{view.queue_position})"
    if view.verdict is None:
        return str(view.state)
    if view.verdict == "exit":
        return f"exit {view.exit_code}"
    return str(view.verdict)


def summary_line(view: JobView) -> str:
    """The one line printed on stderr when ``kcoral python`` is done."""
    parts = [f"kcoral: job {view.id}: {view.verdict or view.state}"]
    if view.exit_code is not None:
        parts.append(f"exit code {view.exit_code}")
    parts.append(f"ran {fmt_duration(run_time(view))}")
    if view.image is not None:
        parts.append(f"image {short_digest(view.image.digest) if view.image.digest else view.image.ref}")
    line = ", ".join(parts)
    if view.reason:  # an ok job's too: outputs it wrote that were refused
        line += f" ({view.reason})"
    return line


def fmt_score(score: Score | None) -> str:
    """``1.0123x [1.0011, 1.0234]``: a speedup with its 95% interval; ``-`` for none."""
    if score is None:
        return "-"
    return f"{score.speedup:.4f}x [{score.speedup_lo:.4f}, {score.speedup_hi:.4f}]"


def jobs_table(views: list[JobView]) -> Table:
    from rich.table import Table

    table = Table(box=None, header_style="bold", pad_edge=False)
    for column in ("ID", "STATE", "SCORE (95% INTERVAL)", "CREATED", "RAN", "GPUS", "COMMAND"):
        table.add_column(column, no_wrap=True, overflow="ellipsis")
    for view in sorted(views, key=lambda v: v.times.created, reverse=True):  # newest first, as listed
        gpus = ",".join(str(g.index) for g in view.gpus) or str(view.spec.gpus)
        table.add_row(
            cell(view.id),
            cell(state_text(view)),
            cell(fmt_score(view.score)),
            cell(fmt_time(view.times.created)),
            cell(fmt_duration(run_time(view))),
            cell(gpus),
            cell(fmt_argv(view)),
        )
    return table


def job_details(view: JobView) -> Table:
    from rich.table import Table

    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    rows: list[tuple[str, str]] = [
        ("id", view.id),
        ("owner", view.owner),
        ("state", state_text(view)),
        *([("waiting", f"cannot start yet: {view.waiting}")] if view.waiting else []),
        ("command", fmt_argv(view, limit=200)),
        ("env", ", ".join(view.env_names) or "-"),
        ("timeout", fmt_duration(view.spec.timeout_s)),
        ("created", fmt_time(view.times.created)),
        ("started", fmt_time(view.times.started)),
        ("finished", fmt_time(view.times.finished)),
        ("ran", fmt_duration(run_time(view))),
    ]
    if view.times.phases:
        rows.append(("phases", fmt_phases(view.times.phases)))
    if view.verdict is not None:
        rows.append(("exit code", "-" if view.exit_code is None else str(view.exit_code)))
    if view.reason:
        rows.append(("reason", view.reason))
    if view.image is not None:
        rows.append(("image", f"{view.image.ref} {short_digest(view.image.digest)}".strip()))
    if view.gpus:
        rows.append(("gpus", "; ".join(f"{g.index}: {g.name} ({g.memory_total_mib} MiB)" for g in view.gpus)))
    if view.slot:
        rows.append(("slot", view.slot))
    rows.append(("input", f"{view.input_bytes} bytes {view.input_sha256[:12]}".strip()))
    if view.submission_digest:
        rows.append(("submission", f"sha256 {view.submission_digest}"))
    if view.score is not None:
        rows.append(("score", fmt_score(view.score)))
    rows.append(("log", f"{view.log_bytes} bytes"))
    for out in view.outputs:
        rows.append(("output", f"{out.path} ({out.size} bytes)"))
    for key, value in rows:
        table.add_row(key, cell(value))
    return table


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return ", ".join(_scalar(v) for v in value) or "-"
    if isinstance(value, dict):
        return ", ".join(f"{k}={_scalar(v)}" for k, v in value.items()) or "-"
    return "-" if value is None or value == "" else str(value)


def _dict_table(rows: list[dict[str, Any]]) -> Table:
    from rich.table import Table

    columns: list[str] = []
    for row in rows:
        columns += [k for k in row if k not in columns]
    table = Table(box=None, header_style="bold", pad_edge=False)
    for column in columns:
        table.add_column(column.upper())
    for row in rows:
        table.add_row(*(cell(_scalar(row.get(c))) for c in columns))
    return table


def health_view(health: dict[str, Any]) -> RenderableType:
    """The /v1/health object: scalars as ``key: value`` lines, lists of objects as tables."""
    from rich.console import Group

    parts: list[RenderableType] = []
    for key, value in health.items():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            parts += [cell(f"{key}:", style="bold"), _dict_table(value)]
        elif isinstance(value, list):
            parts.append(cell(f"{key}: {', '.join(_scalar(v) for v in value) or '-'}"))
        elif isinstance(value, dict):
            parts.append(cell(f"{key}:", style="bold"))
            parts += [cell(f"  {k}: {_scalar(v)}") for k, v in value.items()]
        else:
            parts.append(cell(f"{key}: {_scalar(value)}"))
    return Group(*parts)
