"""``kcoral history TASK``: your evaluations of a task, newest first, the best so far marked."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from kcoral.cli.commands.common import JsonOption, RemoteOption, TokenOption, connect
from kcoral.cli.output import emit_json, note, stdout
from kcoral.cli.render import cell, fmt_score, fmt_time
from kcoral.protocol.evaluations import BEST_RULE, Evaluation, History
from kcoral.protocol.typeddata import to_data

if TYPE_CHECKING:
    from rich.table import Table

TaskArgument = Annotated[
    str,
    typer.Argument(help="the task id, e.g. demo/softmax (kcoral tasks lists them)", show_default=False, metavar="TASK"),
]


def outcome(e: Evaluation) -> str:
    """``ok``, ``rejected``, ``ok (check)``, ``running``..."""
    said = str(e.verdict or e.state)
    return f"{said} (check)" if e.check else said


def short(digest: str) -> str:
    return digest[:12] or "-"


def history_table(history: History) -> Table:
    from rich.table import Table

    table = Table(box=None, header_style="bold", pad_edge=False)
    for column in ("BEST", "ID", "LABEL", "VERDICT", "SPEEDUP (95% INTERVAL)", "SUBMISSION", "GPU", "FINISHED"):
        table.add_column(column, no_wrap=True, overflow="ellipsis")
    for e in history.evaluations:
        table.add_row(
            "*" if e.best else "",
            cell(e.id),
            cell(e.label or "-"),
            cell(outcome(e)),
            cell(fmt_score(e.score)),
            cell(short(e.submission_digest)),
            cell(e.gpu or "-"),
            cell(fmt_time(e.finished)),
        )
    return table


def history(
    task: TaskArgument,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=500, help="show the newest N")] = 20,
    json: JsonOption = False,
    remote: RemoteOption = None,
    token: TokenOption = None,
) -> None:
    """Your evaluations of TASK, newest first: label, verdict, speedup with its 95% interval, submission
    digest, GPU; * marks the best so far.

    Best so far: the highest speedup of a passing timed evaluation (verdict ok: holdout, every workload
    and every check passed, timing conclusive); checks (--check) and failed evaluations never count.
    """
    with connect(remote, token) as client:
        found = client.history(task, limit)
    if json:
        emit_json(to_data(found))
        return
    out = stdout()
    if not found.evaluations:
        out.print(cell(f"no evaluations of {task} yet: kcoral eval {task} DIR makes one"))
        return
    out.print(history_table(found))
    best = found.best
    if best is None:
        out.print(cell("no best so far: no evaluation has passed with a score yet"))
    else:
        listed = any(e.id == best.id for e in found.evaluations)
        name = f" {best.label}" if best.label else ""
        out.print(cell(f"* best so far: {best.id}{name} {fmt_score(best.score)}{'' if listed else ' (not listed)'}"))
    out.print(cell(f"({BEST_RULE})"))
    if found.total > len(found.evaluations):
        note(f"kcoral: the newest {len(found.evaluations)} of {found.total} are shown; --limit N shows more")
