"""``kcoral best TASK``: the best so far of each token on a task that you may see, best first."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kcoral.cli.commands.common import JsonOption, RemoteOption, TokenOption, connect
from kcoral.cli.commands.history_cmd import TaskArgument, short
from kcoral.cli.output import emit_json, stdout
from kcoral.cli.render import cell, fmt_score, fmt_time
from kcoral.protocol.evaluations import Board
from kcoral.protocol.typeddata import to_data

if TYPE_CHECKING:
    from rich.table import Table


def board_table(board: Board) -> Table:
    from rich.table import Table

    table = Table(box=None, header_style="bold", pad_edge=False)
    for column in ("RANK", "OWNER", "ID", "LABEL", "SPEEDUP (95% INTERVAL)", "SUBMISSION", "GPU", "FINISHED"):
        table.add_column(column, no_wrap=True, overflow="ellipsis")
    for entry in board.entries:
        e = entry.evaluation
        table.add_row(
            "-" if entry.rank is None else str(entry.rank),
            cell((entry.owner or "(anonymous)") + (" (you)" if entry.mine else "")),
            cell(e.id if e else "-"),
            cell(e.label or "-" if e else "-"),
            cell(fmt_score(entry.score)),
            cell(short(e.submission_digest) if e else "-"),
            cell(entry.gpu or "-"),
            cell(fmt_time(e.finished) if e else "-"),
        )
    return table


def best(task: TaskArgument, json: JsonOption = False, remote: RemoteOption = None, token: TokenOption = None) -> None:
    """The best so far on TASK of each token you may see, best first: every token's for an operator;
    your own, and on a server run with --public-board the others' ranks, anonymised.

    Best: the highest speedup of a passing timed evaluation (verdict ok: holdout, every workload and every
    check passed, timing conclusive); checks (--check) and failed evaluations never count.
    """
    with connect(remote, token) as client:
        board = client.best(task)
    if json:
        emit_json(to_data(board))
        return
    out = stdout()
    if not board.entries:
        out.print(cell(f"no best on {task} yet: no evaluation you may see has passed with a score"))
    else:
        out.print(board_table(board))
    out.print(cell(f"shown: {board.scope}"))
    out.print(cell(f"({board.best_rule})"))
