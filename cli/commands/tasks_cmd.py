"""``kcoral tasks`` (the evaluation tasks the server offers), ``kcoral tasks show TASK`` (one task's
whole contract) and ``kcoral init TASK DIR`` (a working solution.py to start from, and a README).
``kcoral eval TASK DIR`` runs one."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Group, RenderableType
from rich.table import Table

from kcoral.cli.commands.common import JsonOption, RemoteOption, TokenOption, connect
from kcoral.cli.output import emit_json, note, stdout
from kcoral.cli.render import cell, fmt_duration
from kcoral.protocol.errors import UsageError
from kcoral.tasks.documents import TaskContract, TensorSpec

TaskArgument = Annotated[str, typer.Argument(help="the task id, e.g. demo/softmax", show_default=False, metavar="TASK")]


def _names(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def tasks_view(tasks: list[dict[str, Any]]) -> RenderableType:
    """A table of the tasks, then each task's description and contract."""
    broken = [t for t in tasks if t.get("error")]
    tasks = [t for t in tasks if not t.get("error")]
    if not tasks and not broken:
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
    if broken:
        parts += [cell(""), cell("cannot be loaded or run here:", style="bold")]
        for t in sorted(broken, key=lambda t: str(t.get("id", ""))):
            parts.append(cell(f"  {t.get('id', '?')} ({t.get('format') or '?'}): {t.get('error')}"))
    return Group(*parts)


tasks_app = typer.Typer(help="The evaluation tasks: list them, or show one's whole contract.", add_completion=False)


@tasks_app.callback(invoke_without_command=True)
def tasks(ctx: typer.Context, remote: RemoteOption = None, token: TokenOption = None, json: JsonOption = False) -> None:
    """List the evaluation tasks: id, version, device, workloads, holdout probes, time limit, contract.
    `kcoral tasks show TASK` gives one task's whole contract."""
    if ctx.invoked_subcommand is not None:
        return
    with connect(remote, token) as client:
        found = client.tasks()
    if json:
        emit_json(found)
    else:
        stdout().print(tasks_view(found))


def _tensor(name: str, spec: TensorSpec) -> str:
    return f"{name} {spec.dtype}[{', '.join(map(str, spec.shape))}]"


def contract_lines(c: TaskContract) -> list[str]:
    """The contract as plain lines (the terminal view and the README that ``kcoral init`` writes)."""
    lines = [
        f"{c.id} (version {c.version or '-'}, {c.device}, time limit {fmt_duration(c.timeout_s)})",
        f"  {c.description}",
        *([f"  runs on: {' or '.join(c.gpu_types)} only"] if c.gpu_types else []),
        "",
        f"contract: {c.contract}",
        "",
        "workloads (each: the data setup gets, what it must write, the tolerance):",
    ]
    for w in c.workloads:
        tol = " ".join(f"{k}={v:g}" for k, v in w.tolerance.items())
        lines.append(f"  {w.id} ({'timed' if w.timed else 'checked'}; params {w.params})")
        lines.append(f"    in:  {'; '.join(_tensor(n, s) for n, s in w.inputs.items())}")
        if w.scalars:
            lines.append(f"         {', '.join(f'{k}={v!r}' for k, v in w.scalars.items())}")
        lines.append(f"    out: {'; '.join(_tensor(n, s) for n, s in w.outputs.items())}")
        lines.append(f"    tolerance: {tol}")
    lines += [
        "",
        f"holdout: {c.holdout}",
        "",
        f"tolerance rule: {c.tolerance_rule}",
        "",
        f"timing: {c.timing_method}",
        "",
        f"score: {c.score}",
    ]
    limits = [
        f"floor_ms {c.floor_ms:g}" if c.floor_ms else "",
        f"max_speedup {c.max_speedup:g}x" if c.max_speedup else "",
    ]
    if any(limits):
        lines.append(f"  this task: {', '.join(x for x in limits if x)}")
    lines += ["", f"image: {c.image} (python {c.python or '?'})"]
    if c.packages:
        lines.append("  packages: " + ", ".join(f"{n} {v}" for n, v in c.packages.items()))
    else:
        lines.append(f"  packages: unknown ({c.packages_error or 'the server did not say'})")
    return lines


@tasks_app.command("show")
def show_task(
    task: TaskArgument, remote: RemoteOption = None, token: TokenOption = None, json: JsonOption = False
) -> None:
    """One task's whole contract: each workload's inputs and outputs (shapes, dtypes), tolerances,
    the timing method, the score, the time limit, the packages a submission can import."""
    with connect(remote, token) as client:
        contract = client.task(task)
    if json:
        emit_json(contract.document())
        return
    stdout().print(cell("\n".join(contract_lines(contract))), soft_wrap=True)
    if contract.template:
        note(f"kcoral: `kcoral init {task} DIR` writes a working solution.py to start from")


def init(
    task: TaskArgument,
    folder: Annotated[
        Path, typer.Argument(help="the submission directory to make", show_default=False, metavar="FOLDER")
    ],
    force: Annotated[bool, typer.Option("--force", help="overwrite solution.py and README.md")] = False,
    remote: RemoteOption = None,
    token: TokenOption = None,
) -> None:
    """Write FOLDER/solution.py (a working start: the baseline's approach; a pack problem's native
    submission: KernelBench's ModelNew, GPU MODE's submission.py) and FOLDER/README.md (the task's
    contract); then `kcoral eval TASK FOLDER`."""
    with connect(remote, token) as client:
        contract = client.task(task)
    if not contract.template:
        raise UsageError(f"task {task} has no template on this server")
    targets = [folder / (Path(contract.submission_file).name or "solution.py"), folder / "README.md"]
    existing = [str(t) for t in targets if t.exists()]
    if existing and not force:
        raise UsageError(f"{', '.join(existing)} already exist: pass --force to overwrite")
    folder.mkdir(parents=True, exist_ok=True)
    readme = [
        f"# {contract.id}",
        "",
        f"Evaluate: `kcoral eval {contract.id} {folder}`",
        "",
        "```",
        *contract_lines(contract),
        "```",
        "",
    ]
    targets[0].write_text(contract.template)
    targets[1].write_text("\n".join(readme))
    note(f"kcoral: wrote {targets[0]} and {targets[1]}; next: kcoral eval {contract.id} {folder}")
