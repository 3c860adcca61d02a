"""``kcoral proton``: profile the scopes a Triton kernel marks with Proton's language on the server; the trace
comes back and its per-scope summary is printed.

    kcoral proton --send DIR [--output-dir OUT] [--data trace|tree] [Proton options] [-e K=V] [--timeout S]
                  [--json] -- python SCRIPT.py [ARGS]      (or -- python -m MODULE [ARGS])
    kcoral proton summarize TRACE [--clock-mhz F] [--json]   (kcoral iket summarize's, on a .chrome_trace)
    kcoral proton summarize TREE.hatchet [--json]            (--data tree's: cycles per scope, per kernel)
    kcoral proton plot TRACE -o timeline.png                 (kcoral iket plot's)

kcoral's own options may come anywhere before ``--``; every other option there must be one of the Proton
options the server passes through (profiling.proton.ALLOWED), checked here first.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from kcoral.cli.commands.common import (
    EnvOption,
    GpuTypeOption,
    JsonOption,
    OutputDirOption,
    ProfilerGpusOption,
    RemoteOption,
    SendOption,
    TimeoutOption,
    TokenOption,
)
from kcoral.cli.commands.iket_cmd import TOOLS, run_tool
from kcoral.cli.output import emit_json, note
from kcoral.cli.runflow import PythonRun
from kcoral.cli.toolargs import CommonOptions, ToolArgs, run_profiler, split_long_options, tool_spec
from kcoral.profiling import proton as pro
from kcoral.protocol.errors import UsageError
from kcoral.protocol.models import JobView

OPTIONS_METAVAR = "[OPTIONS] [PROTON OPTIONS] -- python SCRIPT.py [ARGS]...  |  summarize|plot TRACE"


def split_proton_args(args: list[str]) -> ToolArgs:
    """Split what typer left over into Proton options (``--long=value``), kcoral's and the command."""
    return split_long_options(args, pro.take_option)


class ProtonRun(PythonRun):
    """``kcoral python``'s flow; afterwards, the trace's per-scope summary printed."""

    def after_outputs(self, view: JobView, output_dir: Path | None) -> dict[str, Any]:
        from kcoral.profiling.iket_summary import format_summary
        from kcoral.profiling.iket_trace import TraceError
        from kcoral.protocol.printable import printable

        extra: dict[str, Any] = {"trace": None, "tree": None, "summary": None}
        if output_dir is None:
            note("kcoral: the job returned no trace (see the log above)")
            return extra
        trace, tree = output_dir / pro.TRACE_FILE, output_dir / pro.TREE_FILE
        extra["trace"] = str(trace) if trace.is_file() else None
        extra["tree"] = str(tree) if tree.is_file() else None
        if extra["tree"]:
            extra["tree_summary"] = print_tree(tree, quiet=self.opts.json)
            note(f"kcoral: Proton tree {tree}  (kcoral proton summarize {tree}; proton-viewer reads it too)")
        try:
            extra["summary"] = pro.job_summary(output_dir)
        except TraceError as exc:
            note(f"kcoral: cannot summarise the trace: {exc}")
            return extra
        if extra["summary"] is not None:
            if not self.opts.json:
                for line in format_summary(extra["summary"]):
                    print(printable(line), flush=True)
            note(f"kcoral: trace {trace}  (kcoral proton summarize {trace}; kcoral proton plot {trace})")
        elif not extra["tree"]:
            note("kcoral: no Proton trace came back (see the log: did a kernel mark scopes?)")
        return extra


def proton(
    ctx: typer.Context,
    send: SendOption = Path("."),
    output_dir: OutputDirOption = None,
    env: EnvOption = None,
    timeout: TimeoutOption = None,
    gpus: ProfilerGpusOption = 1,
    gpu_type: GpuTypeOption = "any",
    json: JsonOption = False,
    remote: RemoteOption = None,
    token: TokenOption = None,
) -> None:
    """Profile the scopes a Triton kernel marks with Proton's language (triton.profiler.language) in
    `python SCRIPT.py`; print per scope count/min/median/max in SM clock cycles, the CTA spans, the periods.

    The server starts Proton's instrumentation backend around the script and finalizes it after: the script
    only marks scopes (pl.enter_scope/pl.exit_scope, or with pl.scope(...)). Proton options passed through:
    --data trace|tree (trace: proton.chrome_trace, the default; tree: proton.hatchet, sums),
    --mode default|mma, --granularity cta|warp|warp_2|...|warp_group_8, --buffer-type shared|global|stack,
    --buffer-strategy circular|flush, --buffer-size BYTES, --optimizations time_shift,sched_stores
    (Triton 3.6 compiles only --granularity warp and --buffer-strategy circular for an NVIDIA GPU).
    proton.json comes back too (triton's version, the mode, the GPU's SM clock).
    Tools: `kcoral proton summarize TRACE` (or TREE.hatchet), `kcoral proton plot TRACE -o timeline.png`.
    """
    args = list(ctx.args)
    if args[:1] == ["summarize"] and any(a.endswith(pro.TREE_EXTENSION) for a in args[1:]):
        raise typer.Exit(summarize_tree(args[1:]))
    if args and args[0] in TOOLS:
        raise typer.Exit(run_tool(args, "kcoral proton"))
    parsed = split_proton_args(args)
    typed = CommonOptions(send, env or [], timeout, gpus, gpu_type, json, remote, token)
    code = run_profiler(parsed, typed, output_dir, build_proton_spec, ProtonRun)
    raise typer.Exit(code)


build_proton_spec = tool_spec("proton", pro.normalise_options, pro.check_command)


def print_tree(path: Path, quiet: bool = False) -> dict[str, Any] | None:
    """The Proton tree's summary (profiling.proton_tree), printed unless ``quiet``; None (said) when unreadable."""
    from kcoral.profiling import proton_tree

    try:
        doc = proton_tree.load(path)
    except proton_tree.TreeError as exc:
        note(f"kcoral: cannot summarise the tree: {exc}")
        return None
    if not quiet:
        show_tree(doc)
    return doc


def show_tree(doc: dict[str, Any]) -> None:
    """A tree's summary as text (kernel and scope names are the job's: escaped)."""
    from kcoral.profiling.proton_tree import format_lines
    from kcoral.protocol.printable import printable

    for line in format_lines(doc):
        print(printable(line), flush=True)


def summarize_tree(args: list[str]) -> int:
    """``kcoral proton summarize TREE.hatchet [--json]``: 0, or 2 with one line for a file that is no tree."""
    from kcoral.profiling import proton_tree

    files = [a for a in args if a != "--json"]
    if len(files) != 1 or any(a.startswith("-") for a in files):
        raise UsageError("usage: kcoral proton summarize TREE.hatchet [--json]")
    try:
        doc = proton_tree.load(files[0])
    except proton_tree.TreeError as exc:
        raise UsageError(str(exc)) from None
    if "--json" in args:
        emit_json(doc)
    else:
        show_tree(doc)
    return 0
