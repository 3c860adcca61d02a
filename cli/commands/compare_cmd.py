"""``kcoral compare A B``: evaluation B against evaluation A, workload by workload, in the words of a
robust comparison (from the 95% intervals), with the unified diff of their submissions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from kcoral.cli.commands.common import JsonOption, RemoteOption, TokenOption, connect
from kcoral.cli.commands.history_cmd import outcome, short
from kcoral.cli.output import emit_json, stdout
from kcoral.cli.render import cell, fmt_score
from kcoral.protocol.evaluations import Comparison, Evaluation, WorkloadComparison
from kcoral.protocol.typeddata import to_data

if TYPE_CHECKING:
    from rich.console import RenderableType

EVALUATION_HELP = "an evaluation: its job id (or an unambiguous start of it), or its label (the newest so named)"
FirstArgument = Annotated[str, typer.Argument(help=EVALUATION_HELP, show_default=False, metavar="A")]
SecondArgument = Annotated[str, typer.Argument(help=EVALUATION_HELP, show_default=False, metavar="B")]

#: what each verdict word says
WORDS = {
    "faster": "faster: B's interval lies wholly above A's",
    "slower": "slower: B's interval lies wholly below A's",
    "same": "same: the intervals lie within 1% of each other",
    "ambiguous": "ambiguous: the intervals overlap and are too wide to tell (evaluate again, or on a quieter host)",
}


def _delta(w: WorkloadComparison) -> str:
    return "-" if w.delta is None else f"{w.delta:+.2%}"


def _side(name: str, e: Evaluation) -> str:
    label = f" {e.label}" if e.label else ""
    return f"{name}: {e.id}{label}, {outcome(e)}, {fmt_score(e.score)}, submission {short(e.submission_digest)}"


def comparison_view(c: Comparison) -> RenderableType:
    from rich.console import Group
    from rich.table import Table

    parts: list[RenderableType] = [cell(_side("A", c.a)), cell(_side("B", c.b))]
    words = WORDS.get(c.summary.verdict, "no verdict: one of them has no score")
    parts.append(cell(f"B against A: {words} (delta {_delta(c.summary)})", style="bold"))
    table = Table(box=None, header_style="bold", pad_edge=False)
    for column in (
        "WORKLOAD",
        "A",
        "A SPEEDUP (95% INTERVAL)",
        "B",
        "B SPEEDUP (95% INTERVAL)",
        "DELTA",
        "B AGAINST A",
    ):
        table.add_column(column, no_wrap=True)
    for w in [*c.workloads, c.summary]:
        table.add_row(
            cell(w.id),
            cell(w.a_verdict or "-"),
            cell(fmt_score(w.a)),
            cell(w.b_verdict or "-"),
            cell(fmt_score(w.b)),
            cell(_delta(w)),
            cell(w.verdict or "-"),
        )
    parts += [cell(""), table, cell("")]
    if c.identical:
        parts.append(cell(f"identical submissions (sha256 {c.a.submission_digest}): no diff", style="bold"))
    else:
        parts += diff_lines(c)
    return Group(*parts)


def diff_lines(c: Comparison) -> list[RenderableType]:
    """The diff of B against A, each line escaped (protocol.printable: it is the submissions' text)."""
    d = c.diff
    parts: list[RenderableType] = [cell(f"changed: {', '.join(d.changed) or 'nothing shown'}")]
    styles = {"+": "green", "-": "red", "@": "cyan"}
    for line in d.text.splitlines():
        parts.append(cell(line, style=styles.get(line[:1], "")))
    if d.truncated:
        parts.append(cell("(the diff is cut here: it is longer than the server shows)"))
    parts += [cell(f"not compared: {s}") for s in d.skipped]
    return parts


def compare(
    a: FirstArgument,
    b: SecondArgument,
    json: JsonOption = False,
    remote: RemoteOption = None,
    token: TokenOption = None,
) -> None:
    """Compare evaluation B against evaluation A: per workload both speedups with their 95% intervals
    and B against A in the words of a robust comparison (faster, slower, same or ambiguous, decided from
    the intervals, never from the point values alone); "identical submissions" when the same files were
    sent, else the unified diff of the two submissions.
    """
    with connect(remote, token) as client:
        found = client.compare(a, b)
    if json:
        emit_json(to_data(found))
    else:
        stdout().print(comparison_view(found))
