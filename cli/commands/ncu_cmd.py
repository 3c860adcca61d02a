"""``kcoral ncu``: profile a command with Nsight Compute on the server; get the report and a summary back.

    kcoral ncu --send DIR -o FILE.ncu-rep [ncu options...] [-e K=V] [--timeout S] [--json] -- COMMAND...
    kcoral ncu summarize FILE.ncu-rep [--json]            (needs a local ncu, or FILE.ncu-rep.json beside it)

kcoral's own options may come anywhere before ``--``; every other option there must be one of the ncu
options the server passes through (profiling.ncu.ALLOWED), checked here before anything is sent.
"""

from __future__ import annotations

import json as jsonlib
import os
import shutil
from pathlib import Path
from typing import Annotated, Any

import typer

from kcoral.cli.client import KcoralClient
from kcoral.cli.commands.common import (
    EnvOption,
    GpuTypeOption,
    JsonOption,
    ProfilerGpusOption,
    RemoteOption,
    SendOption,
    TimeoutOption,
    TokenOption,
    connect,
    job_spec,
)
from kcoral.cli.output import emit_json, note
from kcoral.cli.runflow import PythonRun, RunOptions
from kcoral.cli.toolargs import COMMON_OWN_OPTIONS, CommonOptions, ToolArgs, common_options, split_tool_args
from kcoral.profiling import ncu as ncu_opts
from kcoral.profiling.ncu_summary import SummaryError, format_kernel_lines, summarize
from kcoral.protocol.errors import UsageError
from kcoral.protocol.models import JobView, SpecBase

OPTIONS_METAVAR = "[OPTIONS] [NCU OPTIONS] -- COMMAND [ARGS]...  |  summarize FILE.ncu-rep"

#: kcoral's own options, recognised also after the first ncu option: name -> takes a value
OWN_OPTIONS = {
    **COMMON_OWN_OPTIONS,
    "-o": True,
    "--output": True,
    "-f": False,
    "--force-overwrite": False,
}


class NcuArgs(ToolArgs):
    @property
    def ncu(self) -> list[str]:
        return self.tool


def split_ncu_args(args: list[str]) -> NcuArgs:
    """Split what typer left over into ncu options, kcoral options and the command (UsageError when bad)."""
    parsed = split_tool_args(args, OWN_OPTIONS, ncu_opts.take_ncu_option)
    return NcuArgs(parsed.tool, parsed.command, parsed.own)


def report_path(output: str | None) -> Path:
    if not output:
        raise UsageError("say where the report goes: -o FILE.ncu-rep")
    path = Path(output)
    if not path.name.endswith(".ncu-rep"):
        path = path.with_name(path.name + ".ncu-rep")
    return path


def summary_path(report: Path) -> Path:
    return report.with_name(report.name + ".json")


def print_summary(doc: dict[str, Any]) -> None:
    for line in format_kernel_lines(doc):
        print(line, flush=True)


class NcuRun(PythonRun):
    """``kcoral python``'s flow; the report and its summary are moved to -o once downloaded."""

    def __init__(self, client: KcoralClient, options: RunOptions, report: Path) -> None:
        super().__init__(client, options)
        self.report = report
        self.saved = False

    def after_outputs(self, view: JobView, output_dir: Path | None) -> dict[str, Any]:
        extra: dict[str, Any] = {"report": None, "summary_path": None, "summary": None}
        if output_dir is None:
            note("kcoral: the job returned no report")
            return extra
        got_report = output_dir / ncu_opts.REPORT_FILE
        got_summary = output_dir / ncu_opts.SUMMARY_FILE
        self.report.parent.mkdir(parents=True, exist_ok=True)
        if got_report.is_file():
            os.replace(got_report, self.report)
            self.saved = True
            extra["report"] = str(self.report)
            note(f"kcoral: report saved to {self.report}")
        if got_summary.is_file():
            target = summary_path(self.report)
            os.replace(got_summary, target)
            extra["summary_path"] = str(target)
            try:
                extra["summary"] = jsonlib.loads(target.read_text())
            except ValueError:
                note(f"kcoral: the summary {target} is not valid JSON")
            if extra["summary"] is not None and not self.opts.json:
                print_summary(extra["summary"])
        self._tidy(output_dir, view)
        if not self.saved:
            note("kcoral: no report came back (ncu profiled no kernel, or the command failed): see the log above")
        return extra

    def _tidy(self, staging: Path, view: JobView) -> None:
        """Other files the job wrote go to ./kcoral-out/JOB_ID; the staging directory goes away."""
        rest = [p for p in staging.rglob("*") if p.is_file()]
        if rest:
            target = Path("kcoral-out") / view.id
            for p in rest:
                dest = target / p.relative_to(staging)
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.replace(p, dest)
            note(f"kcoral: {len(rest)} other output file(s) in {target}")
        shutil.rmtree(staging, ignore_errors=True)

    def exit_code(self, view: JobView) -> int:
        code = super().exit_code(view)
        return 1 if code == 0 and not self.saved else code


def build_ncu_spec(
    parsed: NcuArgs, env: list[str], timeout: float | None, gpus: int, gpu_type: str = "any"
) -> SpecBase:
    try:
        ncu_opts.normalise_ncu_options(parsed.ncu)
        ncu_opts.check_command(parsed.command)
    except ncu_opts.NcuOptionError as exc:
        raise UsageError(str(exc)) from None
    fields = {"kind": "ncu", "argv": parsed.ncu, "command": parsed.command, "gpus": gpus, "gpu_type": gpu_type}
    return job_spec(fields, env, timeout)


def ncu(
    ctx: typer.Context,
    send: SendOption = Path("."),
    output: Annotated[
        str | None, typer.Option("--output", "-o", help="where the report goes (FILE.ncu-rep; summary beside it)")
    ] = None,
    force: Annotated[bool, typer.Option("--force-overwrite", "-f", help="overwrite an existing -o file")] = False,
    env: EnvOption = None,
    timeout: TimeoutOption = None,
    gpus: ProfilerGpusOption = 1,
    gpu_type: GpuTypeOption = "any",
    json: JsonOption = False,
    remote: RemoteOption = None,
    token: TokenOption = None,
) -> None:
    """Profile COMMAND with Nsight Compute on the server; save the report at -o and print a summary per kernel.

    ncu options passed through: --set, --section, --metrics, --launch-count/-c, --launch-skip/-s,
    --kernel-name/-k (regex: too), --kernel-name-base, --kernel-id, --nvtx, --nvtx-include, --nvtx-exclude,
    --replay-mode, --clock-control, --cache-control, --target-processes, --import-source.
    The summary JSON is saved as FILE.ncu-rep.json. `kcoral ncu summarize FILE.ncu-rep` reads a report locally.
    """
    args = list(ctx.args)
    if args and args[0] == "summarize":
        raise typer.Exit(run_summarize(args[1:]))
    parsed = split_ncu_args(args)
    opts = common_options(parsed, CommonOptions(send, env or [], timeout, gpus, gpu_type, json, remote, token))
    output = parsed.last("-o", "--output") or output
    force = force or parsed.flag("-f", "--force-overwrite")

    report = report_path(output)
    spec = build_ncu_spec(parsed, opts.env, opts.timeout, opts.gpus, opts.gpu_type)
    if not opts.send.is_dir():
        raise UsageError(f"--send {opts.send}: not a directory")
    if report.exists() and not force:
        raise UsageError(f"{report} exists: pass -f to overwrite it")
    staging = report.parent / f".{report.name}.kcoral-download"
    options = RunOptions(spec=spec, send_dir=opts.send, output_dir=staging, json=opts.json)
    with connect(opts.remote, opts.token) as client:
        code = NcuRun(client, options, report).run()
    raise typer.Exit(code)


# --- kcoral ncu summarize --------------------------------------------------------------------------------

summarize_app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)


@summarize_app.command()
def _summarize(
    report: Annotated[Path, typer.Argument(help="an .ncu-rep file", metavar="FILE.ncu-rep")],
    json: JsonOption = False,
    ncu_path: Annotated[str | None, typer.Option("--ncu", help="the ncu binary to use")] = None,
) -> None:
    """Summarise an Nsight Compute report per kernel (duration, throughputs, registers, occupancy, advice)."""
    if not report.is_file():
        raise UsageError(f"{report}: no such file")
    try:
        doc = summarize(str(report), ncu_path)
    except SummaryError as exc:
        beside = summary_path(report)
        if not beside.is_file():
            raise UsageError(f"cannot read {report} here: {exc}") from None
        note(f"kcoral: no Nsight Compute here; showing the summary the server made ({beside})")
        doc = jsonlib.loads(beside.read_text())
    if json:
        emit_json(doc)
    else:
        print_summary(doc)


def run_summarize(args: list[str]) -> int:
    rv = summarize_app(args=args, prog_name="kcoral ncu summarize", standalone_mode=False)
    return rv if isinstance(rv, int) else 0
