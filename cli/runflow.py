"""``kcoral python``'s flow: pack, submit, upload, wait in the queue, stream the log, fetch outputs.

The flow submits any JobSpec (``kcoral python``, ``eval``, ``ncu``, ``iket``), and :meth:`PythonRun.follow`
takes over a job that already exists and is queued (``kcoral rerun``).
Ctrl-C at any point after the job exists cancels it on the server and exits 130.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kcoral.cli import output
from kcoral.cli.client import KcoralClient
from kcoral.cli.logsink import LOG_KEEP_BYTES, LogSink
from kcoral.cli.output import emit_json, job_json, note
from kcoral.cli.progress import upload_progress
from kcoral.cli.render import summary_line
from kcoral.cli.tarball import IGNORE_FILE, Tarball, build_tarball
from kcoral.protocol.errors import EXIT_INTERRUPTED, EXIT_OK, KcoralError
from kcoral.protocol.models import EvalSpec, JobState, JobView, SpecBase
from kcoral.protocol.submission import default_label, tar_digest

CANCEL_WAIT_S = 15.0


@dataclass
class RunOptions:
    spec: SpecBase
    send_dir: Path
    output_dir: Path | None = None  # default: ./kcoral-out/JOB_ID
    json: bool = False
    detach: bool = False
    poll_s: float = 1.0
    log: str = "stdout"  # where the job's log goes: stdout (its stderr on stderr) | stderr | none


def _log_sink(options: RunOptions) -> LogSink:
    """The job's stdout on ours and its stderr on ours (``log="stdout"``), both on our stderr
    (``log="stderr"``), or neither; with --json nothing on stdout and the log kept for the document."""
    keep = LOG_KEEP_BYTES if options.json else 0
    if options.log == "stderr":
        return LogSink(sys.stderr.buffer, keep=keep)
    if options.log == "stdout" and not options.json:
        return LogSink(sys.stdout.buffer, keep=keep, errors=sys.stderr.buffer)
    return LogSink(None, keep=keep)


#: above this much content, the client warns before sending (the largest files named)
WARN_SEND_BYTES = 100 * 1024 * 1024


def describe_sent(tar: Tarball, folder: Path) -> None:
    """What was left out (the default excludes, .kcoralignore), and a warning for a large upload."""
    if tar.skipped:
        shown = ", ".join(tar.skipped[:6]) + (f" and {len(tar.skipped) - 6} more" if len(tar.skipped) > 6 else "")
        note(f"kcoral: not sent: {shown} (default excludes and {folder / IGNORE_FILE}; a '!' line there sends one)")
    if tar.content_bytes > WARN_SEND_BYTES:
        largest = ", ".join(f"{name} {human_bytes(size)}" for name, size in tar.largest)
        note(
            f"kcoral: warning: sending {human_bytes(tar.content_bytes)} (largest: {largest}); "
            f"list what the job does not need in {folder / IGNORE_FILE}"
        )


def labelled(spec: SpecBase, folder: Path, tar: Tarball) -> SpecBase:
    """An evaluation's spec with its label: the one given (``spec`` itself), else a copy labelled with the
    folder's name and the start of the submission's digest (kcoral.protocol.submission: the digest the
    server works out of the same tar)."""
    if not isinstance(spec, EvalSpec) or spec.label:
        return spec
    return replace(spec, label=default_label(folder, tar_digest(tar.path)))


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


class PythonRun:
    """One job of any kind (``options.spec``) against ``client``; :meth:`run` returns the exit code."""

    def __init__(self, client: KcoralClient, options: RunOptions) -> None:
        self.client = client
        self.opts = options
        self.job_id = ""
        self.extra: dict[str, Any] = {}
        self.sink = _log_sink(options)

    def run(self) -> int:
        tar = build_tarball(self.opts.send_dir)
        describe_sent(tar, self.opts.send_dir)
        spec = labelled(self.opts.spec, self.opts.send_dir, tar)
        if spec is not self.opts.spec:
            note(f"kcoral: label {getattr(spec, 'label', '')} (--label NAME names a candidate)")
        self.opts.spec = spec
        try:
            return self._guarded(lambda: self._submit(tar))
        finally:
            tar.remove()

    def follow(self, view: JobView) -> int:
        """Follow a job that exists already and has its input (e.g. a rerun) to the end; the exit code."""
        self.job_id = view.id

        return self._guarded(lambda: self._finish(self._follow_log()))

    def _guarded(self, step: Callable[[], int]) -> int:
        """Run the flow: once the job exists, Ctrl-C cancels it and an error says where the job is."""
        try:
            return step()
        except KeyboardInterrupt:
            if not self.job_id:
                raise
            return self._interrupted()
        except KcoralError as err:
            if self.job_id and not err.hint:
                err.hint = f"job {self.job_id} may still be on the server: kcoral status {self.job_id}"
            raise

    def _submit(self, tar: Tarball) -> int:
        def created(view: JobView) -> None:
            self.job_id = view.id
            note(f"kcoral: job {view.id}: sending {tar.files} files ({human_bytes(tar.content_bytes)})")

        with upload_progress(tar.size) as progress:
            view = self.client.submit(self.opts.spec, tar.path, progress, on_created=created)
        if self.opts.detach:
            if self.opts.json:
                emit_json(job_json(view))
            else:
                print(view.id, flush=True)
            return EXIT_OK
        return self._finish(self._follow_log())

    def _follow_log(self) -> JobView:
        """Stream the log until the job has finished; returns the final view. The job's status comes
        in the same stream: its queue position while it waits, and how it ended (a server that does
        not send it is asked once the stream ends)."""
        last: JobView | None = None
        shown: tuple[int, str] | None = None

        def status(view: JobView) -> None:
            nonlocal last, shown
            position = view.queue_position
            if view.state == JobState.queued and position is not None and (position, view.waiting) != shown:
                shown = (position, view.waiting)
                note(f"queued: position {position}" + (f"; cannot start yet: {view.waiting}" if view.waiting else ""))
            last = view

        while True:
            for piece in self.client.follow_log(self.job_id, self.sink.total, on_status=status):
                self.sink.write(piece.data, piece.stream)
            view = last if last is not None and last.state == JobState.finished else self.client.status(self.job_id)
            if view.state == JobState.finished:
                if view.log_bytes > self.sink.total:  # the stream ended early: fetch the rest
                    for piece in self.client.follow_log(self.job_id, self.sink.total, follow=False):
                        self.sink.write(piece.data, piece.stream)
                return view
            time.sleep(self.opts.poll_s)

    def _finish(self, view: JobView) -> int:
        output_dir: Path | None = None
        error: KcoralError | None = None
        if view.outputs:
            output_dir = self.opts.output_dir or Path("kcoral-out") / view.id
            try:
                for out in view.outputs:
                    self.client.download(view.id, out.path, output_dir, out.sha256)
                note(f"kcoral: {len(view.outputs)} output file(s) in {output_dir}")
            except KcoralError as err:
                if not self.opts.json:
                    raise
                error = err
        if error is None:
            self.extra = self.after_outputs(view, output_dir)
        note(summary_line(view))
        if self.opts.json:
            emit_json(self._document(view, output_dir, error))
        if error is not None:
            return output.exit_code_for_error(error)
        return self.exit_code(view)

    # --- hooks for flows built on this one (kcoral ncu, kcoral iket) -------------------------------------

    def after_outputs(self, view: JobView, output_dir: Path | None) -> dict[str, Any]:
        """Called once the outputs are downloaded; what it returns is added to the --json document."""
        return {}

    def exit_code(self, view: JobView) -> int:
        return output.exit_code_for_job(view)

    def _document(self, view: JobView, output_dir: Path | None, error: KcoralError | None) -> dict[str, Any]:
        doc = job_json(view)
        # kcoral's own exit code (what the command exits with: 124 on timeout...), the container's beside it
        doc["job_exit_code"], doc["exit_code"] = view.exit_code, self.exit_code(view)
        doc["log"] = self.sink.text()
        doc["log_truncated"] = self.sink.truncated
        doc["output_dir"] = str(output_dir) if output_dir is not None else None
        doc.update(self.extra)
        if error is not None:
            doc["error"] = {"type": type(error).__name__, "message": error.message}
        return doc

    def _interrupted(self) -> int:
        """Ctrl-C: cancel the job, wait a little for it to end (a second Ctrl-C stops waiting), exit 130."""
        note(f"\nkcoral: interrupted: cancelling job {self.job_id}")
        try:
            view = self.client.cancel(self.job_id)
            deadline = time.monotonic() + CANCEL_WAIT_S
            while view.state != JobState.finished and time.monotonic() < deadline:
                time.sleep(min(self.opts.poll_s, 0.5))
                view = self.client.status(self.job_id)
        except KcoralError as err:
            note(f"kcoral: could not cancel job {self.job_id}: {err.message}")
            return EXIT_INTERRUPTED
        if view.state == JobState.finished:
            note(summary_line(view))
        if self.opts.json:
            emit_json(self._document(view, None, None))
        return EXIT_INTERRUPTED
