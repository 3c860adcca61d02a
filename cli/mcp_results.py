"""What ``kcoral mcp``'s tools return (cli.mcp_server): typed results, so that each tool's output schema
lists its fields instead of ``{"type": "object"}``, built from the client library's JobResult.

An evaluation's report comes once: its lines and figures in ``lines``, ``workloads`` and ``summary``;
the job's log, which ends with the same lines, is given without them (what the submission printed,
set apart from the report, so that a printed ``passed: 7/7`` cannot pass for it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from kcoral.cli.library import JobResult
from kcoral.tasks.documents import Summary, WorkloadRow

#: the most log bytes one tool result carries (an agent's context is not a log viewer)
LOG_PAGE = 16 << 10


class JobOutcome(BaseModel):
    """A finished job."""

    job_id: str
    verdict: str = Field(description="ok, failed, rejected, timeout, cancelled, infrastructure_error, ...")
    exit_code: int = Field(description="kcoral's exit code for the job: 0 ok, 1 rejected, 124 timeout, ...")
    job_exit_code: int | None = Field(description="the container's own exit code, if it exited")
    reason: str = Field(description="why the job ended as it did ('' when it simply finished)")
    log_tail: str = Field(description="the end of the job's log (stdout and stderr in order)")
    log_bytes_cut: int = Field(description="bytes of the log before log_tail that are not here")
    log_hint: str | None = Field(default=None, description="how to page through what was cut")
    outputs: list[str] = Field(description="local paths of the job's output files, downloaded")
    output_dir: str | None = Field(description="the local folder they were downloaded into")


class EvaluationOutcome(JobOutcome):
    """A finished evaluation: the job, and its report once (``log_tail`` is what the submission printed,
    without the report's lines)."""

    ok: bool = Field(description="the evaluation passed")
    failure: str = Field(description="the first failure's reason, in one line ('' when it passed)")
    lines: list[str] = Field(default_factory=list, description="the report as kcoral eval prints it")
    passed: int | None = Field(default=None, description="workloads passed")
    total: int | None = Field(default=None, description="workloads in all")
    workloads: list[WorkloadRow] = Field(default_factory=list, description="each workload's verdict and figures")
    summary: Summary | None = Field(default=None, description="the score (none for a check or a failure)")


class NcuOutcome(JobOutcome):
    """A finished Nsight Compute job."""

    summary: dict[str, Any] | None = Field(description="the per-kernel summary (.ncu-rep.json)")
    report: str | None = Field(description="the local path of the .ncu-rep report (ncu --import opens it)")


class IketOutcome(JobOutcome):
    """A finished IKET job."""

    summary: dict[str, Any] | None = Field(description="the trace summary (summary.json)")
    traces: list[str] = Field(description="local paths of the trace files (.trace.json, .pftrace)")


class SanitizerOutcome(JobOutcome):
    """A finished compute-sanitizer job (``job_exit_code`` 86: it reported errors)."""

    errors: int | None = Field(description="the errors compute-sanitizer counted (None: no report came back)")
    summary: dict[str, Any] | None = Field(
        description="the errors grouped by kernel and kind: count, first source line, first thread and block"
    )
    reports: list[str] = Field(description="local paths of the text and XML reports")


class TimelineOutcome(JobOutcome):
    """A finished timeline job."""

    summary: dict[str, Any] | None = Field(
        description="top kernels by total time; per stream the gaps between kernels (median, p90, the largest), "
        "launch latency, copies, memsets, syncs, launching threads; the host's syncs (microseconds)"
    )
    trace: str | None = Field(description="the local path of the Chrome trace (Perfetto opens it)")


class ProtonOutcome(JobOutcome):
    """A finished Proton job."""

    summary: dict[str, Any] | None = Field(
        description="per launch: each scope's count/min/median/mean/max in SM clock cycles, CTA spans, periods"
    )
    trace: str | None = Field(description="the local path of proton.chrome_trace (kcoral proton summarize/plot)")


class LogPage(BaseModel):
    """A page of a job's log."""

    job_id: str
    offset: int
    text: str
    next_offset: int = Field(description="the offset of the next page")
    total_bytes: int = Field(description="the log's size")
    more: bool = Field(description="the log goes on after this page")


class Downloaded(BaseModel):
    """A job's output files, downloaded."""

    job_id: str
    files: list[str] = Field(description="their local paths")


def tail(log: str) -> tuple[str, int]:
    """The log's end that fits a tool result, and how many bytes were left out before it."""
    data = log.encode()
    if len(data) <= LOG_PAGE:
        return log, 0
    return data[-LOG_PAGE:].decode(errors="replace"), len(data) - LOG_PAGE


def job_outcome(done: JobResult, log: str | None = None) -> dict[str, Any]:
    """A finished job's fields (``log``: what to give as its log, default all of it)."""
    shown, cut = tail(done.log if log is None else log)
    fields: dict[str, Any] = {
        "job_id": done.job.id,
        "verdict": str(done.job.verdict),
        "exit_code": done.exit_code,
        "job_exit_code": done.job.exit_code,
        "reason": done.job.reason,
        "log_tail": shown,
        "log_bytes_cut": cut,
        "outputs": [str(p) for p in done.files],
        "output_dir": str(done.output_dir) if done.output_dir else None,
    }
    if cut:
        fields["log_hint"] = f"the log's first {cut} bytes are not here: job_log(job_id, offset=0) pages through them"
    return fields


def evaluation(done: JobResult) -> EvaluationOutcome:
    """A finished evaluation with its report once: the log given without the report's lines."""
    report = done.report
    fields = job_outcome(done, without_report(done.log, list(report.lines) if report is not None else []))
    fields |= {"ok": done.ok, "failure": done.failure}
    if report is not None:
        fields |= {"lines": list(report.lines), "passed": report.passed, "total": report.total}
        fields |= {"workloads": list(report.workloads), "summary": report.summary}
    return EvaluationOutcome(**fields)


def without_report(log: str, lines: list[str]) -> str:
    """``log`` less the report's ``lines`` it ends with (the server writes them last); unchanged when it
    does not end with them."""
    printed = "".join(f"{line}\n" for line in lines)
    return log[: -len(printed)] if printed and log.endswith(printed) else log


def ncu(done: JobResult) -> NcuOutcome:
    return NcuOutcome(**job_outcome(done), summary=_json_output(done, ".ncu-rep.json"), report=_path(done, ".ncu-rep"))


def iket(done: JobResult) -> IketOutcome:
    traces = [str(p) for p in done.files if p.name.endswith((".trace.json", ".pftrace"))]
    return IketOutcome(**job_outcome(done), summary=_json_output(done, "summary.json"), traces=traces)


def sanitizer(done: JobResult) -> SanitizerOutcome:
    from kcoral.profiling.sanitizer import TEXT_FILE, XML_FILE
    from kcoral.profiling.sanitizer_findings import ReportError
    from kcoral.profiling.sanitizer_report import load_pair, summarize

    xml = next((p for p in done.files if p.name == XML_FILE), None)
    text = next((p for p in done.files if p.name == TEXT_FILE), None)
    try:
        summary: dict[str, Any] | None = summarize(load_pair(xml, text))
    except ReportError as exc:
        summary = {"error": str(exc)}
    errors = summary.get("errors") if summary else None
    reports = [str(p) for p in (text, xml) if p is not None]
    return SanitizerOutcome(**job_outcome(done), errors=errors, summary=summary, reports=reports)


def timeline(done: JobResult) -> TimelineOutcome:
    from kcoral.profiling.gputrace import TRACE_FILE
    from kcoral.profiling.gputrace_load import TimelineError, load
    from kcoral.profiling.gputrace_summary import summarize

    trace = next((p for p in done.files if p.name == TRACE_FILE), None)
    try:
        summary: dict[str, Any] | None = summarize(load(trace)) if trace else None
    except TimelineError as exc:
        summary = {"error": str(exc)}
    return TimelineOutcome(**job_outcome(done), summary=summary, trace=str(trace) if trace else None)


def proton(done: JobResult) -> ProtonOutcome:
    from kcoral.profiling.iket_trace import TraceError
    from kcoral.profiling.proton import job_summary

    try:
        summary = job_summary(done.output_dir) if done.output_dir else None
    except TraceError as exc:
        summary = {"error": str(exc)}
    return ProtonOutcome(**job_outcome(done), summary=summary, trace=_path(done, ".chrome_trace"))


def _json_output(done: JobResult, suffix: str) -> Any:
    for path in done.files:
        if path.name.endswith(suffix):
            try:
                return json.loads(Path(path).read_text())
            except (OSError, ValueError):
                return None
    return None


def _path(done: JobResult, suffix: str) -> str | None:
    return next((str(p) for p in done.files if p.name.endswith(suffix)), None)
