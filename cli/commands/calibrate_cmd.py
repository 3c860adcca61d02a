"""``kcoral calibrate TASK``: A/A requests of a task on the server, then each slot's noise floor.

An A/A request evaluates the task's own template (the server's: nothing is sent) against its baseline
(tasks.calibration). The server keeps what each passed request measured under the slot it ran on, and
once a slot has enough of them, every later evaluation there folds the floor in: the candidate's calls
less the position's cost, the interval widened by the spread between requests (report.json: each timed
workload's ``calibration``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import typer

from kcoral.cli import output
from kcoral.cli.client import KcoralClient
from kcoral.cli.commands.common import JsonOption, RemoteOption, TokenOption, connect
from kcoral.cli.commands.eval_cmd import first_failure
from kcoral.cli.evaldocs import fetch
from kcoral.cli.floors import floor_words
from kcoral.cli.output import emit_json, job_progress, note, print_error
from kcoral.protocol.errors import UsageError
from kcoral.protocol.models import MAX_CALIBRATION_REQUESTS, CalibrationFloors, JobView, Verdict
from kcoral.protocol.printable import printable
from kcoral.protocol.typeddata import to_data
from kcoral.tasks.calibration import DEFAULT_REQUESTS, MIN_REQUESTS
from kcoral.tasks.documents import EvalReport


@dataclass
class Request:
    """One A/A request as it ended."""

    number: int
    view: JobView
    report: EvalReport | None

    @property
    def ok(self) -> bool:
        return self.view.verdict == Verdict.ok

    def speedup(self) -> tuple[float, float, float] | None:
        """The request's speedup and interval (the summary's; a task with one timed workload has it too)."""
        if self.report is None:
            return None
        s = self.report.summary
        if s is not None:
            return s.speedup, s.speedup_lo, s.speedup_hi
        row = next((r for r in self.report.workloads if r.speedup is not None), None)
        if row is None or row.speedup is None or row.speedup_lo is None or row.speedup_hi is None:
            return None
        return row.speedup, row.speedup_lo, row.speedup_hi

    def document(self) -> dict[str, Any]:
        figures = self.speedup()
        doc: dict[str, Any] = {
            "request": self.number,
            "job_id": self.view.id,
            "verdict": None if self.view.verdict is None else str(self.view.verdict),
            "reason": self.view.reason,
            "speedup": None if figures is None else figures[0],
            "speedup_lo": None if figures is None else figures[1],
            "speedup_hi": None if figures is None else figures[2],
        }
        if not self.ok:
            doc["failure"] = first_failure(self.view, self.report)
        return doc


def calibrate(
    task: Annotated[
        str,
        typer.Argument(
            help="the task id, e.g. demo/softmax (kcoral tasks lists them)", show_default=False, metavar="TASK"
        ),
    ],
    requests: Annotated[
        int,
        typer.Option("--requests", "-n", min=1, max=MAX_CALIBRATION_REQUESTS, help="how many A/A requests to make"),
    ] = DEFAULT_REQUESTS,
    apart: Annotated[
        float,
        typer.Option(
            "--apart",
            min=0,
            max=86400,
            help="ask for the requests one at a time, this many seconds apart (0: all at once); a floor from "
            "one window of time misses a host whose noise changes over minutes",
        ),
    ] = 0.0,
    json: JsonOption = False,
    remote: RemoteOption = None,
    token: TokenOption = None,
) -> None:
    """Measure the server's noise floor for TASK: A/A requests (the task's template against its baseline),
    then each slot's floor, which every later evaluation there folds into its interval.

    Exit status: 0 every request passed; otherwise the first failed one's, as `kcoral eval` exits (1
    rejected, 3 inconclusive, 124 timeout, 125 infrastructure error); 2 bad input, 69 server
    unreachable, 75 too many jobs waiting, 77 unauthorized.
    """
    if not task.strip():
        raise UsageError("say which task: kcoral tasks lists them")
    with connect(remote, token) as client:
        slot_note, done = ask(client, task, requests, apart, json)
        rows = [r for r in client.calibrations(task) if r.task == task]
    failed = [r for r in done if not r.ok]
    code = output.exit_code_for_job(failed[0].view) if failed else 0
    message = _failure_message(failed, len(done))
    if json:
        emit_json(
            {
                "task": task,
                "ok": not failed,
                "exit_code": code,
                "slot_note": slot_note,
                "requests": [r.document() for r in done],
                "calibrations": to_data(rows),
                **({"error": {"type": "CalibrationFailed", "message": message}} if failed else {}),
            }
        )
    else:
        for line in floor_lines(rows):
            typer.echo(printable(line, newlines=True))
        if failed:
            print_error(message)
    raise typer.Exit(code)


def ask(
    client: KcoralClient,
    task: str,
    requests: int,
    apart: float,
    quiet: bool,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[str, list[Request]]:
    """The A/A requests made and followed to their ends: queued at once, or (``apart`` seconds) each
    asked for once the one before has ended and that long has passed; with the server's note on slots."""
    if not apart:
        asked = client.calibrate(task, requests)
        if not quiet:
            note(f"kcoral: {len(asked.jobs)} A/A requests of {task} queued: {asked.slot_note}")
        return asked.slot_note, [_wait(client, n, len(asked.jobs), job, quiet) for n, job in enumerate(asked.jobs, 1)]
    done: list[Request] = []
    slot_note = ""
    for number in range(1, requests + 1):
        if number > 1:
            if not quiet:
                note(f"kcoral: the next A/A request in {apart:g} s")
            sleep(apart)
        asked = client.calibrate(task, 1)
        if number == 1 and not quiet:
            note(f"kcoral: {requests} A/A requests of {task}, one at a time {apart:g} s apart: {asked.slot_note}")
        slot_note = asked.slot_note
        done += [_wait(client, number, requests, job, quiet) for job in asked.jobs]
    return slot_note, done


def _wait(client: KcoralClient, number: int, of: int, job_id: str, quiet: bool) -> Request:
    """Follow one request to its end, saying where it is (unless ``quiet``)."""

    said = job_progress(f"request {number}/{of} (job {{id}})")
    view = client.wait(job_id, on_change=None if quiet else said)
    done = Request(number, view, fetch(EvalReport, client, view))
    if not quiet:
        note(request_line(done, of))
    return done


def request_line(request: Request, of: int) -> str:
    """``request 2/5 (job ID): ok, speedup 0.9412x [0.9310, 0.9520]``, or why it did not pass."""
    head = f"kcoral: request {request.number}/{of} (job {request.view.id}): "
    verdict = str(request.view.verdict)
    figures = request.speedup()
    if request.ok:
        return head + verdict + (f", speedup {figures[0]:.4f}x [{figures[1]:.4f}, {figures[2]:.4f}]" if figures else "")
    failure = first_failure(request.view, request.report)
    return head + (failure if failure.startswith(f"{verdict}:") else f"{verdict}: {failure}")


def floor_lines(rows: list[CalibrationFloors]) -> list[str]:
    """Each slot's floor for the task as it is now (earlier versions of the task: a count only)."""
    current = [r for r in rows if r.current]
    lines = []
    for row in current:
        lines.append(f"slot {row.slot}: {row.requests} recent A/A request(s)")
        if not row.workloads:
            lines.append(f"  no noise floor yet: it needs {MIN_REQUESTS} passed requests on this slot")
        for workload, floor in row.workloads.items():
            lines.append(f"  {floor_words(workload, floor)}")
    if not current:
        lines.append("no slot has an A/A calibration of this task as it is now")
    older = len(rows) - len(current)
    if older:
        lines.append(f"({older} calibration(s) of earlier versions of the task are not used)")
    return lines


def _failure_message(failed: list[Request], total: int) -> str:
    if not failed:
        return ""
    first = failed[0]
    return (
        f"calibration: {len(failed)} of {total} A/A requests did not pass (not kept); request {first.number} "
        f"(job {first.view.id}): {first_failure(first.view, first.report)}"
    )
