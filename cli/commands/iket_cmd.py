"""``kcoral iket``: trace a CuTe DSL kernel with run-iket on the server; every file comes back into OUT.

    kcoral iket --send DIR --output-dir OUT [-e K=V] [--timeout S] -- [run-iket options] profile
                [profile options] -- COMMAND...
    kcoral iket summarize TRACE [--marker NAME] [--group-by auto|role|warp|name] [--json]
    kcoral iket plot TRACE -o timeline.png [--launch N]

TRACE: run-iket's JSON trace (.trace.json) or its Perfetto trace (.pftrace, or .pftrace.gz), told apart
by their first bytes; both give the same summary (a .pftrace has no grid or block size). `kcoral proton
summarize|plot` are these tools too, on Proton's trace (.chrome_trace: times in SM clock cycles).

Everything after kcoral's options up to ``profile`` goes to run-iket, everything from ``profile`` to the
next ``--`` to its profile subcommand (``--postprocess all`` is added when no --postprocess is given: the JSON
trace, the Perfetto trace and its HTML viewer),
and the rest is the traced command.
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
    TimeoutOption,
    TokenOption,
    connect,
    job_spec,
)
from kcoral.cli.output import emit_json, note
from kcoral.cli.runflow import PythonRun, RunOptions
from kcoral.profiling import iket as iket_opts
from kcoral.protocol.errors import UsageError
from kcoral.protocol.models import JobView

OPTIONS_METAVAR = "[OPTIONS] -- [RUN-IKET OPTIONS] profile [PROFILE OPTIONS] -- COMMAND [ARGS]...  |  summarize|plot"
TOOLS = ("summarize", "plot")


def split_iket_args(args: list[str]) -> tuple[list[str], list[str]]:
    """``(argv for the server = [run-iket options, profile, profile options], command)``."""
    if iket_opts.SUBCOMMAND not in args:
        raise UsageError("expected: kcoral iket [OPTIONS] -- [run-iket options] profile [profile options] -- COMMAND")
    at = args.index(iket_opts.SUBCOMMAND)
    rest = args[at + 1 :]
    if "--" not in rest:
        raise UsageError(
            "put the traced command after a -- following the profile options: "
            "... profile --postprocess all -- python capture.py"
        )
    cut = rest.index("--")
    argv, command = [*args[:at], iket_opts.SUBCOMMAND, *rest[:cut]], rest[cut + 1 :]
    try:
        iket_opts.split_iket_argv(argv)
        iket_opts.check_command(command)
    except iket_opts.IketOptionError as exc:
        raise UsageError(str(exc)) from None
    return argv, command


class IketRun(PythonRun):
    """``kcoral python``'s flow; afterwards, name the traces that came back."""

    def after_outputs(self, view: JobView, output_dir: Path | None) -> dict[str, Any]:
        def found(pattern: str) -> list[str]:
            return sorted(str(p) for p in output_dir.rglob(pattern)) if output_dir else []

        traces, perfetto, viewers = found("*.trace.json"), found("*.pftrace"), found("*.html")
        if not traces and not perfetto:
            note("kcoral: no IKET trace came back (see the log; was the kernel compiled in the traced process?)")
        for t in traces:
            note(f"kcoral: trace {t}  (kcoral iket summarize {t})")
        for t in perfetto:
            note(
                f"kcoral: Perfetto trace {t}  (open it at https://ui.perfetto.dev: Open trace file; "
                f"kcoral iket summarize {t})"
            )
        for t in viewers:
            note(f"kcoral: trace viewer {t}  (opens in a browser, the trace inside)")
        return {"traces": traces, "perfetto_traces": perfetto, "trace_viewers": viewers}


def iket(
    ctx: typer.Context,
    send: Annotated[Path, typer.Option("--send", "-s", help="directory to send (the job's working directory)")] = Path(
        "."
    ),
    output_dir: OutputDirOption = None,
    env: EnvOption = None,
    timeout: TimeoutOption = None,
    gpus: ProfilerGpusOption = 1,
    gpu_type: GpuTypeOption = "any",
    json: JsonOption = False,
    remote: RemoteOption = None,
    token: TokenOption = None,
) -> None:
    """Trace COMMAND with run-iket (IKET) on the server; every file it writes comes back into --output-dir.

    The server runs `run-iket --output-dir ... [run-iket options] profile [profile options] -- COMMAND` with
    CUTE_DSL_NO_CACHE=1. run-iket runs the app twice: it must be deterministic.
    Tools: `kcoral iket summarize TRACE`, `kcoral iket plot TRACE -o timeline.png` (TRACE: the .trace.json
    or the .pftrace).
    """
    args = list(ctx.args)
    if args and args[0] in TOOLS:
        raise typer.Exit(run_tool(args))
    argv, command = split_iket_args(args)
    fields = {"kind": "iket", "argv": argv, "command": command, "gpus": gpus, "gpu_type": gpu_type}
    spec = job_spec(fields, env, timeout)
    if not send.is_dir():
        raise UsageError(f"--send {send}: not a directory")
    options = RunOptions(spec=spec, send_dir=send, output_dir=output_dir, json=json)
    with connect(remote, token) as client:
        code = IketRun(client, options).run()
    raise typer.Exit(code)


# --- local tools: summarize, plot -----------------------------------------------------------------------

tools_app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, no_args_is_help=True)


def _load(trace: Path) -> Any:
    """The trace in either format; a file that is neither, or is broken, is a usage error (exit 2)."""
    from kcoral.profiling.iket_load import load
    from kcoral.profiling.iket_trace import TraceError

    if not trace.exists():
        raise UsageError(f"{trace}: no such file")
    try:
        return load(trace)
    except TraceError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"{trace}: {exc.strerror or exc}") from None


@tools_app.command("summarize")
def summarize_cmd(
    trace: Annotated[
        Path,
        typer.Argument(
            help="run-iket's trace (iket_pid_0x<pid>.trace.json or .pftrace) or Proton's (proton.chrome_trace)",
            metavar="TRACE",
        ),
    ],
    marker: Annotated[
        str | None, typer.Option("--marker", help="period of this marker (or range) [default: every repeated marker]")
    ] = None,
    group_by: Annotated[str, typer.Option("--group-by", help="auto | role | warp | name")] = "auto",
    skip: Annotated[int, typer.Option("--skip", min=0, help="warm-up occurrences left out of periods")] = 0,
    kernel: Annotated[str | None, typer.Option("--kernel", help="only launches whose name contains this")] = None,
    clock_mhz: Annotated[
        float | None,
        typer.Option("--clock-mhz", min=1, help="a Proton trace's SM clock: adds microseconds to its cycles"),
    ] = None,
    json: JsonOption = False,
) -> None:
    """Per launch: range duration stats (per warp role when recorded), CTA spans, marker periods (ns for
    IKET, SM clock cycles for Proton).

    Reads IKET's JSON trace or Perfetto trace (.pftrace), or Proton's trace (.chrome_trace), told apart by
    their bytes.
    """
    from kcoral.profiling.iket_summary import GROUPINGS, format_summary, summarize
    from kcoral.protocol.printable import printable

    if group_by not in GROUPINGS:
        raise UsageError(f"--group-by must be one of {', '.join(GROUPINGS)}")
    doc = summarize(_load(trace), marker=marker, group_by=group_by, skip=skip, kernel=kernel, clock_mhz=clock_mhz)
    if json:
        emit_json(doc)
        return
    if not doc["launches"]:
        note("kcoral: the trace has no (matching) launch")
    for line in format_summary(doc):
        print(printable(line))  # range, marker and kernel names are the job's


@tools_app.command("plot")
def plot_cmd(
    trace: Annotated[
        Path, typer.Argument(help="run-iket's .trace.json or .pftrace, or Proton's .chrome_trace", metavar="TRACE")
    ],
    out: Annotated[Path, typer.Option("--output", "-o", help="the PNG to write")] = Path("timeline.png"),
    launch: Annotated[int | None, typer.Option("--launch", help="launch index [default: the busiest]")] = None,
    kernel: Annotated[str | None, typer.Option("--kernel", help="only launches whose name contains this")] = None,
    max_ctas: Annotated[int, typer.Option("--max-ctas", min=1, help="CTAs drawn")] = 8,
) -> None:
    """Draw a per-CTA / per-warp timeline of one launch (needs matplotlib)."""
    from kcoral.profiling.timeline import PlotUnavailable, plot

    try:
        path = plot(_load(trace), out, launch=launch, kernel=kernel, max_ctas=max_ctas)
    except (PlotUnavailable, ValueError) as exc:
        raise UsageError(str(exc)) from None
    note(f"kcoral: timeline written to {path}")


def run_tool(args: list[str], prog_name: str = "kcoral iket") -> int:
    rv = tools_app(args=args, prog_name=prog_name, standalone_mode=False)
    return rv if isinstance(rv, int) else 0
