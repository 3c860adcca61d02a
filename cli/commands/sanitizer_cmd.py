"""``kcoral sanitizer``: check a command with compute-sanitizer on the server; its reports come back with
their errors grouped by kernel and kind.

    kcoral sanitizer --send DIR [--output-dir OUT] [--tool memcheck|racecheck|initcheck|synccheck]
                     [sanitizer options] [-e K=V] [--timeout S] [--json] -- COMMAND...
    kcoral sanitizer summarize FILE [--json]      (sanitizer.txt or sanitizer.xml, told apart by their bytes)

kcoral's own options may come anywhere before ``--``; every other option there must be one of the
compute-sanitizer options the server passes through (profiling.sanitizer.ALLOWED), checked here first.
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
from kcoral.cli.toolargs import CommonOptions, ToolArgs, run_profiler, split_long_options, tool_spec
from kcoral.profiling import sanitizer as san
from kcoral.profiling.sanitizer_findings import ERRORS_EXIT, ReportError
from kcoral.protocol.errors import UsageError
from kcoral.protocol.models import JobView

OPTIONS_METAVAR = "[OPTIONS] [SANITIZER OPTIONS] -- COMMAND [ARGS]...  |  summarize FILE"


def split_sanitizer_args(args: list[str]) -> ToolArgs:
    """Split what typer left over into compute-sanitizer options (``--long=value``), kcoral's and the command."""
    return split_long_options(args, san.take_option)


build_sanitizer_spec = tool_spec("sanitizer", san.normalise_options, san.check_command)


def print_summary(doc: dict[str, Any]) -> None:
    from kcoral.profiling.sanitizer_report import format_lines

    for line in format_lines(doc):
        print(line, flush=True)


class SanitizerRun(PythonRun):
    """``kcoral python``'s flow; afterwards, the reports' errors grouped and printed."""

    def after_outputs(self, view: JobView, output_dir: Path | None) -> dict[str, Any]:
        from kcoral.profiling.sanitizer_report import load_pair, summarize

        extra: dict[str, Any] = {"text_report": None, "xml_report": None, "summary": None}
        if output_dir is None:
            note("kcoral: the job returned no report (see the log above)")
            return extra
        xml, text = output_dir / san.XML_FILE, output_dir / san.TEXT_FILE
        extra["xml_report"] = str(xml) if xml.is_file() else None
        extra["text_report"] = str(text) if text.is_file() else None
        try:
            extra["summary"] = summarize(load_pair(xml, text))
        except ReportError as exc:
            note(f"kcoral: cannot summarise the reports: {exc}")
            return extra
        if not self.opts.json:
            print_summary(extra["summary"])
        for path in (extra["text_report"], extra["xml_report"]):
            if path:
                note(f"kcoral: report {path}  (kcoral sanitizer summarize {path})")
        return extra


def sanitizer(
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
    """Check COMMAND with compute-sanitizer on the server; print its errors grouped by kernel and kind.

    compute-sanitizer options passed through: --tool memcheck|racecheck|initcheck|synccheck (default
    memcheck), --leak-check full|no, --check-device-heap yes|no, --padding N (memcheck),
    --racecheck-report analysis|hazard|all (racecheck), --track-unused-memory yes|no (initcheck),
    --print-limit N, --show-backtrace yes|no|host|device, --kernel-name F, --kernel-name-exclude F,
    --launch-skip N, --launch-count N. The reports come back as sanitizer.txt and sanitizer.xml.
    Exit code: 0 when the tool reported no error, 86 when it reported errors (whatever the command's own
    code), else the command's. `kcoral sanitizer summarize FILE` reads a report here.
    """
    args = list(ctx.args)
    if args and args[0] == "summarize":
        raise typer.Exit(run_summarize(args[1:]))
    typed = CommonOptions(send, env or [], timeout, gpus, gpu_type, json, remote, token)
    code = run_profiler(split_sanitizer_args(args), typed, output_dir, build_sanitizer_spec, SanitizerRun)
    raise typer.Exit(code)


# --- kcoral sanitizer summarize -----------------------------------------------------------------------------

summarize_app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)


@summarize_app.command()
def _summarize(
    report: Annotated[Path, typer.Argument(help="sanitizer.txt or sanitizer.xml", metavar="FILE")],
    json: JsonOption = False,
) -> None:
    """Group a compute-sanitizer report's errors by kernel and kind: count, first source line, first thread.

    Exits 0 when the report counts no error, 86 when it counts some, 2 when FILE is not a report."""
    from kcoral.profiling.sanitizer_report import load, summarize

    try:
        doc = summarize(load(report))
    except ReportError as exc:
        raise UsageError(f"{report}: {exc}") from None
    if json:
        emit_json(doc)
    else:
        print_summary(doc)
    if doc["errors"]:
        raise typer.Exit(ERRORS_EXIT)


def run_summarize(args: list[str]) -> int:
    rv = summarize_app(args=args, prog_name="kcoral sanitizer summarize", standalone_mode=False)
    return rv if isinstance(rv, int) else 0
