"""``kcoral eval TASK SUBMISSION``: evaluate a submission (a directory with solution.py, or one .py file) on the
server.

The job's log streams as it is written and ends with the server's report lines (what the submission
printed comes first, each line marked ``submission | ``, the first 4 KiB of it); report.json and
receipt.json are downloaded into --output-dir. Exit status 0 only when the evaluation passed (the job's
verdict is ok), 1 when it did not; a job that could not finish exits as ``kcoral python`` would (124
timeout, 125 infrastructure error, 130 cancelled...).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from kcoral.cli import output
from kcoral.cli.client import KcoralClient
from kcoral.cli.commands.common import GpuTypeOption, JsonOption, RemoteOption, TokenOption, connect, job_spec
from kcoral.cli.durations import Duration
from kcoral.cli.evaldocs import load
from kcoral.cli.logsink import SubmissionMarks, terminal_columns
from kcoral.cli.output import note
from kcoral.cli.runflow import PythonRun, RunOptions
from kcoral.cli.submission import check_submission, submission_folder
from kcoral.protocol.errors import KcoralError, UsageError
from kcoral.protocol.models import EvalSpec, JobView, Verdict
from kcoral.tasks.documents import EvalReport, Receipt
from kcoral.tasks.harness.schema import Outcome


def first_failure(view: JobView, report: EvalReport | None) -> str:
    """Why an evaluation did not pass, in one line: the holdout, the first failed workload, or a flag."""
    if report is None:
        reason = view.reason or "no report"
        return f"{view.verdict or view.state}: {reason}"
    public = next((row for row in report.workloads if row.verdict is not Outcome.PASS), None)
    if public is not None:
        reason = (public.reason or "no reason given").splitlines()[0]
        return f"workload {public.id}: {public.verdict}: {reason}"
    if not report.check and report.holdout is not Outcome.PASS:
        return (
            "holdout correctness: FAIL: every public workload passes, a secret probe did not "
            f"({'wrong values' if report.holdout_failure is Outcome.FAIL else 'an error or a crash'}): "
            "the probes use other shapes and values than the public workloads"
        )
    if report.flags:
        return f"flagged: {report.flags[0]}"
    if report.inconclusive:
        return f"inconclusive: {report.inconclusive[0]}"
    return view.reason or f"verdict {view.verdict}"


class EvalRun(PythonRun):
    """The ``kcoral python`` flow for an eval job: report.json and receipt.json are read once downloaded."""

    def __init__(self, client: KcoralClient, options: RunOptions) -> None:
        super().__init__(client, options)
        # what the submission prints is marked as its own, and capped (cli.logsink.SubmissionMarks)
        self.marks = self.sink.marks = SubmissionMarks(width=terminal_columns())
        self.output_dir: Path | None = None
        self.report: EvalReport | None = None
        self.receipt: Receipt | None = None

    def after_outputs(self, view: JobView, output_dir: Path | None) -> dict[str, Any]:
        self.output_dir = output_dir
        if output_dir is not None:
            self.report = load(EvalReport, output_dir, view)
            self.receipt = load(Receipt, output_dir, view)
        if view.verdict != Verdict.ok:
            note(f"kcoral: evaluation failed: {first_failure(view, self.report)}")
        elif self.report is None:
            note(f"kcoral: warning: job {view.id} passed but returned no {EvalReport.FILE}")
        return {}

    def exit_code(self, view: JobView) -> int:
        return output.exit_code_for_job(view)

    def _document(self, view: JobView, output_dir: Path | None, error: KcoralError | None) -> dict[str, Any]:
        """report.json's content, plus the job's id, verdict and exit code (no log)."""
        doc: dict[str, Any] = self.report.document() if self.report is not None else {}
        doc.update(
            {
                "job_id": view.id,
                "state": str(view.state),
                "verdict": None if view.verdict is None else str(view.verdict),
                "exit_code": self.exit_code(view),  # kcoral's own (1 rejected, 3 inconclusive, 124 timeout...)
                "job_exit_code": view.exit_code,  # the container's
                "reason": view.reason,
                "image": view.image.digest if view.image is not None else None,
                "label": getattr(view.spec, "label", ""),
                "submission_digest": view.submission_digest,
                "output_dir": str(output_dir) if output_dir is not None else None,
                "printed_bytes": self.marks.printed,  # what the submission printed (the job's log has it)
            }
        )
        if view.verdict is not None and view.verdict != Verdict.ok:
            doc["failure"] = first_failure(view, self.report)
        doc.setdefault("task", getattr(view.spec, "task", None))
        if error is not None:
            doc["error"] = {"type": type(error).__name__, "message": error.message}
        return doc


def build_eval_spec(
    task: str, timeout: float | None, check: bool = False, gpu_type: str = "any", label: str = ""
) -> EvalSpec:
    if not task.strip():
        raise UsageError("say which task: kcoral tasks lists them")
    fields = {
        "kind": "eval",
        "task": task,
        "timeout_s": timeout or 0.0,
        "check": check,
        "gpu_type": gpu_type,
        "label": label,
    }
    spec = job_spec(fields, None, None)
    assert isinstance(spec, EvalSpec)
    return spec


def evaluate(
    task: Annotated[
        str,
        typer.Argument(
            help="the task id, e.g. demo/softmax (kcoral tasks lists them)", show_default=False, metavar="TASK"
        ),
    ],
    submission: Annotated[
        Path,
        typer.Argument(
            help="the submission: a directory holding solution.py (a GPU MODE problem's: submission.py), or one .py "
            "file, sent as that file (KernelBench's and GPU MODE's native form)",
            show_default=False,
            metavar="SUBMISSION",
        ),
    ],
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            parser=Duration,
            help="wall-clock limit for the evaluation: 600, 90s, 10m [default: the task's timeout_s]",
        ),
    ] = None,
    output_dir: Annotated[
        Path | None,
        typer.Option("--output-dir", "-o", help="where report.json and receipt.json go [default: ./kcoral-out/JOB_ID]"),
    ] = None,
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help="the public workloads' correctness only, with full tracebacks, in seconds: no holdout, no timing, "
            "no score",
        ),
    ] = False,
    gpu_type: GpuTypeOption = "any",
    label: Annotated[
        str,
        typer.Option(
            "--label",
            "-l",
            help="the candidate's name in kcoral history, compare and best [default: the folder's name and "
            "the start of its files' digest, e.g. softmax_v2-1a2b3c4d]",
            show_default=False,
        ),
    ] = "",
    detach: Annotated[bool, typer.Option("--detach", "-d", help="exit after the upload; print the job id")] = False,
    json: JsonOption = False,
    remote: RemoteOption = None,
    token: TokenOption = None,
) -> None:
    """Evaluate SUBMISSION (a directory with solution.py, or one .py file) against TASK on the server;
    stream the report.

    Exit status: 0 the evaluation passed, 1 it did not (the first failure is printed on stderr), 3
    inconclusive (every check passed but the host was too noisy to time it: no score); 124 timeout,
    125 infrastructure error, 130 cancelled; 2 bad input, 69 server unreachable, 70 server error,
    77 unauthorized.
    """
    check_submission(submission)
    spec = build_eval_spec(task, timeout, check, gpu_type, label)
    with connect(remote, token) as client, submission_folder(client, task, submission) as folder:
        if folder != submission:
            note(f"kcoral: sending {submission} as {next(folder.iterdir()).name}")
        options = RunOptions(spec=spec, send_dir=folder, output_dir=output_dir, json=json, detach=detach)
        code = EvalRun(client, options).run()
    raise typer.Exit(code)
