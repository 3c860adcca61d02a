"""Where the CLI's words go (stdout for results, stderr for everything else) and THE exit-code table.

Exit codes of ``kcoral`` (the job's verdict for ``kcoral python``, else how the request went):

    verdict ok                          0
    verdict exit                        the job's own exit code (1 when it reported none or 0)
    verdict output_limit                123
    verdict timeout                     124
    verdict infrastructure_error        125
    verdict cancelled, or Ctrl-C        130
    verdict memory_limit                137
    bad input, usage error, other 4xx   2
    server unreachable                  69
    unexpected server error, 5xx        70
    unauthorized (401, 403)             77
    busy (429, 503, 507), wait gave up  75

Each error class carries its own (kcoral.protocol.errors); this module maps verdicts.

Commands other than ``python`` exit 0 when their request succeeded, whatever the job's verdict.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from kcoral.protocol.errors import (
    EXIT_INCONCLUSIVE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_SERVER_ERROR,
    EXIT_TRY_LATER,
    KcoralError,
)
from kcoral.protocol.models import JobState, JobView, Verdict
from kcoral.protocol.printable import printable
from kcoral.protocol.typeddata import to_data

if TYPE_CHECKING:  # rich is imported by the commands that draw tables, not at every start-up
    from rich.console import Console

VERDICT_EXIT_CODES: dict[Verdict, int | None] = {
    Verdict.ok: 0,
    Verdict.exit: None,  # the job's own exit code
    Verdict.rejected: 1,  # an evaluation that did not pass
    Verdict.output_limit: 123,
    Verdict.timeout: 124,
    Verdict.infrastructure_error: 125,
    Verdict.cancelled: 130,
    Verdict.interrupted: EXIT_TRY_LATER,  # the server shut down mid-job: the same job may run later
    Verdict.memory_limit: 137,
    Verdict.inconclusive: EXIT_INCONCLUSIVE,
}


def exit_code_for_verdict(verdict: Verdict | str | None, exit_code: int | None = None) -> int:
    """The exit code for a finished job; 0 for ``None`` (not finished)."""
    if verdict is None:
        return EXIT_OK
    code = VERDICT_EXIT_CODES[Verdict(verdict)]
    if code is not None:
        return code
    own = (exit_code or 0) & 0xFF
    return own if own else 1


def exit_code_for_job(view: JobView) -> int:
    return exit_code_for_verdict(view.verdict, view.exit_code)


def exit_code_for_error(err: BaseException) -> int:
    """The exit code for an error raised by the client (anything unknown counts as a server error)."""
    if isinstance(err, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    if isinstance(err, KcoralError):
        return err.exit_code
    return EXIT_SERVER_ERROR


def stdout() -> Console:
    """A console on the current stdout (made per call so test runners that swap sys.stdout work).

    Not a terminal: 200 columns rather than rich's 80, so piped tables keep one row per line.
    """
    from rich.console import Console

    console = Console(file=sys.stdout, highlight=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = 200
    return console


def stderr() -> Console:
    from rich.console import Console

    return Console(file=sys.stderr, highlight=False)


def note(message: str) -> None:
    """A line for the user on stderr, as it is (no markup, no emoji codes, no wrapping)."""
    _line(printable(message, newlines=True))


def job_progress(name: str) -> Callable[[JobView], None]:
    """A printer of a waited-for job's changes (``kcoral: NAME: queued, position 2``, ``...: running``),
    ``NAME`` with ``{id}`` for the job's id."""

    def said(view: JobView) -> None:
        if view.state == JobState.queued and view.queue_position is not None:
            waits = f"; cannot start yet: {view.waiting}" if view.waiting else ""
            note(f"kcoral: {name.format(id=view.id)}: queued, position {view.queue_position}{waits}")
        elif view.state != JobState.finished:
            note(f"kcoral: {name.format(id=view.id)}: {view.state}")

    return said


def print_error(err: KcoralError | str) -> None:
    """``kcoral: error: MESSAGE`` (red on a terminal) (+ a hint line) on stderr."""
    message = err.message if isinstance(err, KcoralError) else err
    _line(f"kcoral: error: {printable(message, newlines=True)}", red=True)
    hint = err.hint if isinstance(err, KcoralError) else ""
    if hint:
        _line(f"kcoral: hint: {printable(hint, newlines=True)}")


def _line(text: str, red: bool = False) -> None:
    stream = sys.stderr
    if red and _colour(stream):
        text = f"\x1b[31m{text}\x1b[0m"
    stream.write(text + "\n")
    stream.flush()


def _colour(stream: Any) -> bool:
    """Colour for a terminal, unless NO_COLOR is set or TERM is dumb (as rich decides)."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"


#: a --json command has printed its document (cli.main prints an error document only when none was)
JSON_EMITTED: ContextVar[bool] = ContextVar("JSON_EMITTED", default=False)


def emit_json(document: Any) -> None:
    """One JSON document on stdout (the only thing --json commands print there)."""
    sys.stdout.write(json.dumps(document, indent=2, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()
    JSON_EMITTED.set(True)


def error_document(message: str, code: int, kind: str, hint: str = "") -> dict[str, Any]:
    """What a --json command prints when it fails before it has a document of its own."""
    doc: dict[str, Any] = {"error": {"type": kind, "message": printable(message, newlines=True)}, "exit_code": code}
    if hint:
        doc["error"]["hint"] = printable(hint, newlines=True)
    return doc


def job_json(view: JobView) -> dict[str, Any]:
    return to_data(view)
