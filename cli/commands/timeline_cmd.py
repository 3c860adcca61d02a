"""``kcoral timeline``: record a Python command's GPU activity (torch.profiler, through CUPTI) on the server;
the Chrome trace comes back and its summary is printed.

    kcoral timeline --send DIR [--output-dir OUT] [--record-shapes] [--with-stack] [-e K=V] [--timeout S]
                    [--json] -- python SCRIPT [ARGS] | python -m MODULE [ARGS] | python -c CODE
    kcoral timeline summarize TRACE [--top N] [--json]
    kcoral timeline plot TRACE [-o timeline.png]

kcoral's own options may come anywhere before ``--``; the others must be the recorder's
(profiling.gputrace.ALLOWED), checked here first, as is the command (Python only).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

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
from kcoral.cli.output import emit_json, note
from kcoral.cli.runflow import PythonRun
from kcoral.cli.toolargs import COMMON_OWN_OPTIONS, CommonOptions, ToolArgs, run_profiler, split_tool_args, tool_spec
from kcoral.profiling import gputrace
from kcoral.protocol.errors import UsageError
from kcoral.protocol.models import JobView

OPTIONS_METAVAR = "[OPTIONS] [--record-shapes] [--with-stack] -- python SCRIPT [ARGS]...  |  summarize|plot TRACE"
TOOLS = ("summarize", "plot")

#: kcoral's own options, recognised also after a recorder option: name -> takes a value
OWN_OPTIONS = {**COMMON_OWN_OPTIONS, "--output-dir": True, "-o": True}


def split_timeline_args(args: list[str]) -> ToolArgs:
    """Split what typer left over into the recorder's options, kcoral's and the command."""
    return split_tool_args(args, OWN_OPTIONS, gputrace.take_option)


build_timeline_spec = tool_spec("timeline", gputrace.normalise_options, gputrace.check_command)


def summary_of(trace: Path, top: int = 10) -> dict[str, Any]:
    """The trace's summary; a file that is no trace is a usage error (one line, exit 2)."""
    from kcoral.profiling.gputrace_load import TimelineError, load
    from kcoral.profiling.gputrace_summary import summarize

    try:
        return summarize(load(trace), top)
    except TimelineError as exc:
        raise UsageError(str(exc)) from None


def print_summary(doc: dict[str, Any]) -> None:
    from kcoral.profiling.gputrace_summary import format_lines

    for line in format_lines(doc):
        print(line, flush=True)


class TimelineRun(PythonRun):
    """``kcoral python``'s flow; afterwards, the trace's summary."""

    def after_outputs(self, view: JobView, output_dir: Path | None) -> dict[str, Any]:
        extra: dict[str, Any] = {"trace": None, "summary": None}
        trace = output_dir / gputrace.TRACE_FILE if output_dir else None
        if trace is None or not trace.is_file():
            note("kcoral: the job returned no trace (see the log above: did the program end by a signal or os._exit?)")
            return extra
        extra["trace"] = str(trace)
        try:
            extra["summary"] = summary_of(trace)
        except UsageError as exc:
            note(f"kcoral: cannot summarise the trace: {exc.message}")
            return extra
        if not self.opts.json:
            print_summary(extra["summary"])
        note(f"kcoral: trace {trace}  (open it at https://ui.perfetto.dev; kcoral timeline summarize|plot {trace})")
        return extra


def timeline(
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
    """Record a Python command's GPU activity with torch.profiler (CUPTI); print the trace's summary.

    The server runs the command in the jobs' Python inside torch.profiler (CPU and CUDA activities):
    kernels, copies, memsets, syncs, streams and the launching threads go into timeline.trace.json (a
    Chrome trace: open it at ui.perfetto.dev). Recorder options: --record-shapes, --with-stack.
    The command must be python SCRIPT [ARGS], python -m MODULE [ARGS] or python -c CODE. The exit code
    is the program's. Tools: `kcoral timeline summarize TRACE`, `kcoral timeline plot TRACE -o t.png`.
    """
    args = list(ctx.args)
    if args and args[0] in TOOLS:
        raise typer.Exit(run_tool(args))
    typed = CommonOptions(send, env or [], timeout, gpus, gpu_type, json, remote, token)
    code = run_profiler(split_timeline_args(args), typed, output_dir, build_timeline_spec, TimelineRun)
    raise typer.Exit(code)


# --- local tools: summarize, plot -----------------------------------------------------------------------

tools_app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, no_args_is_help=True)
TraceArgument = Annotated[
    Path, typer.Argument(help="the Chrome trace (timeline.trace.json, or gzipped)", metavar="TRACE")
]


@tools_app.command("summarize")
def summarize_cmd(
    trace: TraceArgument,
    top: Annotated[int, typer.Option("--top", min=1, max=1000, help="kernels listed")] = 10,
    json: JsonOption = False,
) -> None:
    """The top kernels by total time; per stream the gaps between kernels (median, p90, the largest), the
    launch latency, copies, memsets and syncs, and the launching threads; the host's syncs (microseconds).

    Exits 2 when TRACE is not a readable trace."""
    doc = summary_of(trace, top)
    if json:
        emit_json(doc)
    else:
        print_summary(doc)


@tools_app.command("plot")
def plot_cmd(
    trace: TraceArgument,
    out: Annotated[Path, typer.Option("--output", "-o", help="the PNG to write")] = Path("timeline.png"),
    top: Annotated[int, typer.Option("--top", min=1, max=20, help="kernel names given a colour")] = 10,
) -> None:
    """Draw the GPU activity per stream, and the host's syncs per thread, as a PNG (needs matplotlib)."""
    from kcoral.profiling.gputrace_load import TimelineError
    from kcoral.profiling.gputrace_plot import plot
    from kcoral.profiling.timeline import PlotUnavailable

    try:
        path = plot(trace, out, top=top)
    except (PlotUnavailable, TimelineError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    note(f"kcoral: timeline written to {path}")


def run_tool(args: list[str]) -> int:
    rv = tools_app(args=args, prog_name="kcoral timeline", standalone_mode=False)
    return rv if isinstance(rv, int) else 0
