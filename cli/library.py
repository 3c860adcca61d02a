"""kcoral for programs: ``from kcoral import Client``.

The same experiments as the command line (``run``, ``evaluate``, ``ncu``, ``iket``, ``sanitizer``, ``proton``),
over the same HTTP client (cli.client.KcoralClient), with typed results (the server's own models: JobView,
EvalReport, Receipt, TaskContract) instead of printed text, and failures as exceptions
(kcoral.protocol.errors.KcoralError and its subclasses; ``err.exit_code`` is what the CLI would exit with).

    from kcoral import Client

    kc = Client("http://gpu-host:8901")           # or $KCORAL_REMOTE / $KCORAL_TOKEN
    result = kc.evaluate("demo/softmax", "sub/")
    if not result.ok:
        print(result.failure)                      # the first thing to fix, in one line
"""

from __future__ import annotations

import os
import tempfile
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from kcoral.cli import output
from kcoral.cli.client import KcoralClient
from kcoral.cli.commands.eval_cmd import first_failure
from kcoral.cli.evaldocs import fetch, load
from kcoral.cli.runflow import WARN_SEND_BYTES, human_bytes, labelled
from kcoral.cli.submission import check_submission, submission_folder
from kcoral.cli.tarball import IGNORE_FILE, build_tarball
from kcoral.protocol.errors import KcoralError, UsageError
from kcoral.protocol.evaluations import Board, Comparison, History
from kcoral.protocol.framing import STDERR
from kcoral.protocol.models import (
    EvalSpec,
    IketSpec,
    JobView,
    NcuSpec,
    ProtonSpec,
    PythonSpec,
    SanitizerSpec,
    SpecBase,
    TimelineSpec,
    Verdict,
)
from kcoral.protocol.typeddata import DataError
from kcoral.tasks.documents import EvalReport, Receipt, TaskContract

__all__ = ["Client", "JobResult", "KcoralError"]


@dataclass
class JobResult:
    """A finished job: its view, its log, where its outputs went, and for an evaluation its report
    and receipt. ``exit_code`` is the CLI's for this job (0 ok, 1 a rejected evaluation, 124 timeout...)."""

    job: JobView
    log: str  # stdout and stderr in the order the job wrote them
    output_dir: Path | None
    files: list[Path] = field(default_factory=list)
    report: EvalReport | None = None
    receipt: Receipt | None = None
    stderr: str = ""  # the job's stderr alone
    #: what was left out of the sent folder (default excludes, .kcoralignore), when this call sent it
    not_sent: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.job.verdict == Verdict.ok

    @property
    def exit_code(self) -> int:
        return output.exit_code_for_job(self.job)

    @property
    def failure(self) -> str:
        """Why it did not pass, in one line ("" when it did): the evaluation's first failure, or the
        job's verdict and reason."""
        if self.ok:
            return ""
        if self.job.spec.kind == "eval":
            return first_failure(self.job, self.report)
        return f"{self.job.verdict}: {self.job.reason}" if self.job.reason else str(self.job.verdict)


class Client:
    """One kcoral server. Every method blocks until its job has finished unless ``wait=False`` (then
    it returns the JobView of the submitted job; :meth:`wait` and :meth:`result` finish it later)."""

    def __init__(self, remote: str | None = None, token: str | None = None, timeout: float = 60.0) -> None:
        remote = remote or os.environ.get("KCORAL_REMOTE")
        if not remote:
            raise UsageError("no server given: Client(URL) or $KCORAL_REMOTE")
        self.http = KcoralClient(remote, token or os.environ.get("KCORAL_TOKEN") or None, timeout)

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the four experiments -------------------------------------------------------------------

    def run(
        self,
        argv: Sequence[str],
        send: str | Path | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        gpus: int = 1,
        output_dir: str | Path | None = None,
        wait: bool = True,
    ) -> JobResult | JobView:
        """``python ARGV...`` next to the files of ``send`` (nothing sent when None)."""
        spec = PythonSpec(argv=list(argv), env=dict(env or {}), gpus=gpus, **_timeout(timeout))
        return self._submit(spec, send, output_dir, wait)

    def evaluate(
        self,
        task: str,
        submission: str | Path,
        timeout: float | None = None,
        check: bool = False,
        output_dir: str | Path | None = None,
        wait: bool = True,
        label: str = "",
    ) -> JobResult | JobView:
        """The official evaluation of ``submission`` (a folder with solution.py, a GPU MODE problem's
        submission.py, or one .py file: cli.submission); ``check``: the public workloads' correctness
        only, no score; ``label``: the candidate's name in the history (default: the folder's or the
        file's name and the start of its files' digest)."""
        check_submission(Path(submission))
        try:
            spec = EvalSpec(task=task, timeout_s=timeout or 0.0, check=check, label=label)
        except DataError as exc:
            raise UsageError(f"bad evaluation: {exc}") from None
        with submission_folder(self.http, task, Path(submission)) as folder:
            return self._submit(spec, folder, output_dir, wait)

    def ncu(
        self,
        command: Sequence[str],
        ncu_args: Sequence[str] = ("--set", "full"),
        send: str | Path | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        output_dir: str | Path | None = None,
        wait: bool = True,
    ) -> JobResult | JobView:
        """An Nsight Compute report of ``command`` (``ncu_args``: ncu's own options, ``-o`` included)."""
        return self._profile(NcuSpec, command, ncu_args, send, env, timeout, output_dir, wait)

    def iket(
        self,
        command: Sequence[str],
        iket_args: Sequence[str] = ("profile", "--postprocess", "all"),
        send: str | Path | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        output_dir: str | Path | None = None,
        wait: bool = True,
    ) -> JobResult | JobView:
        """IKET in-kernel trace files of ``command`` (``iket_args``: run-iket's own words)."""
        return self._profile(IketSpec, command, iket_args, send, env, timeout, output_dir, wait)

    def sanitizer(
        self,
        command: Sequence[str],
        sanitizer_args: Sequence[str] = ("--tool", "memcheck"),
        send: str | Path | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        output_dir: str | Path | None = None,
        wait: bool = True,
    ) -> JobResult | JobView:
        """compute-sanitizer's reports on ``command`` (``sanitizer_args``: its options, profiling.sanitizer's
        allow-list; the job's exit code is 86 when it reported errors)."""
        from kcoral.profiling.sanitizer import normalise_options

        args = _checked(lambda: normalise_options(list(sanitizer_args)))
        return self._profile(SanitizerSpec, command, args, send, env, timeout, output_dir, wait)

    def timeline(
        self,
        command: Sequence[str],
        timeline_args: Sequence[str] = (),
        send: str | Path | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        output_dir: str | Path | None = None,
        wait: bool = True,
    ) -> JobResult | JobView:
        """A Chrome trace of a Python ``command``'s GPU activity (torch.profiler through CUPTI):
        timeline.trace.json among the files (``timeline_args``: --record-shapes, --with-stack)."""
        from kcoral.profiling.gputrace import check_command, normalise_options

        _checked(lambda: check_command(list(command)))
        args = _checked(lambda: normalise_options(list(timeline_args)))
        return self._profile(TimelineSpec, command, args, send, env, timeout, output_dir, wait)

    def proton(
        self,
        command: Sequence[str],
        proton_args: Sequence[str] = (),
        send: str | Path | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        output_dir: str | Path | None = None,
        wait: bool = True,
    ) -> JobResult | JobView:
        """Proton's trace of the scopes ``command``'s Triton kernels mark (``command``: python SCRIPT.py ARGS;
        ``proton_args``: profiling.proton's options, e.g. ("--data", "tree"))."""
        from kcoral.profiling.proton import check_command, normalise_options

        _checked(lambda: check_command(list(command)))
        args = _checked(lambda: normalise_options(list(proton_args)))
        return self._profile(ProtonSpec, command, args, send, env, timeout, output_dir, wait)

    def _profile(
        self,
        model: type[NcuSpec] | type[IketSpec] | type[SanitizerSpec] | type[TimelineSpec] | type[ProtonSpec],
        command: Sequence[str],
        args: Sequence[str],
        send: str | Path | None,
        env: Mapping[str, str] | None,
        timeout: float | None,
        output_dir: str | Path | None,
        wait: bool,
    ) -> JobResult | JobView:
        spec = model(argv=list(args), command=list(command), env=dict(env or {}), **_timeout(timeout))
        return self._submit(spec, send, output_dir, wait)

    # --- jobs ------------------------------------------------------------------------------------

    def wait(self, job_id: str, timeout: float | None = None) -> JobView:
        """The job once it has finished (StillRunning after ``timeout`` seconds)."""
        return self.http.wait(self.http.resolve(job_id), timeout)

    def result(self, job_id: str, output_dir: str | Path | None = None, timeout: float | None = None) -> JobResult:
        """Wait for the job, download its outputs (into ``output_dir``, default ./kcoral-out/ID) and
        read its log and documents."""
        view = self.wait(job_id, timeout)
        dest = Path(output_dir) if output_dir is not None else Path("kcoral-out") / view.id
        files = self.http.download_outputs(view, dest) if view.outputs else []
        pieces = list(self.http.follow_log(view.id, 0, follow=False))
        log = b"".join(p.data for p in pieces).decode(errors="replace")
        stderr = b"".join(p.data for p in pieces if p.stream == STDERR).decode(errors="replace")
        report, receipt = load(EvalReport, dest, view), load(Receipt, dest, view)
        return JobResult(view, log, dest if files else None, files, report, receipt, stderr)

    def download(self, job_id: str, output_dir: str | Path | None = None) -> list[Path]:
        view = self.http.status(self.http.resolve(job_id))
        return self.http.download_outputs(view, Path(output_dir or Path("kcoral-out") / view.id))

    def status(self, job_id: str) -> JobView:
        return self.http.status(self.http.resolve(job_id))

    def report(self, job_id: str) -> EvalReport | None:
        """A finished evaluation's report, as its server wrote it (cli.evaldocs); None for a job that is not
        an evaluation, or has not written one (yet)."""
        return fetch(EvalReport, self.http, self.status(job_id))

    def cancel(self, job_id: str) -> JobView:
        return self.http.cancel(self.http.resolve(job_id))

    def jobs(self, limit: int = 50) -> list[JobView]:
        return self.http.jobs(limit)

    def tasks(self) -> list[dict[str, object]]:
        return self.http.tasks()

    def history(self, task: str, limit: int = 20) -> History:
        """Your newest ``limit`` evaluations of ``task``, the best so far marked (protocol.evaluations.BEST_RULE)."""
        return self.http.history(task, limit)

    def compare(self, a: str, b: str) -> Comparison:
        """Evaluation ``b`` against ``a`` (job ids or labels): per workload the speedups and B against A in
        the words of a robust comparison, whether the submissions are identical, and their diff."""
        return self.http.compare(a, b)

    def best(self, task: str) -> Board:
        """The best so far of each token on ``task`` that you may see (your own at least)."""
        return self.http.best(task)

    def task(self, task_id: str) -> TaskContract:
        """The task's whole contract (shapes, dtypes, tolerances, timing, score, packages, template)."""
        return self.http.task(task_id)

    def _submit(
        self, spec: SpecBase, send: str | Path | None, output_dir: str | Path | None, wait: bool
    ) -> JobResult | JobView:
        if send is not None and not Path(send).is_dir():
            raise UsageError(f"{send}: not a directory")
        with tempfile.TemporaryDirectory(prefix="kcoral-") as scratch:
            folder = Path(send) if send is not None else Path(scratch) / "nothing"
            folder.mkdir(exist_ok=True)
            tar = build_tarball(folder, scratch)
            spec = labelled(spec, folder, tar)
            if tar.content_bytes > WARN_SEND_BYTES:
                warnings.warn(
                    f"sending {human_bytes(tar.content_bytes)} from {folder}; list what the job does not need in "
                    f"{folder / IGNORE_FILE}",
                    stacklevel=3,
                )
            view = self.http.submit(spec, tar.path)
        if not wait:
            return view
        done = self.result(view.id, output_dir)
        done.not_sent = list(tar.skipped)
        return done


def _timeout(timeout: float | None) -> dict[str, Any]:
    return {} if timeout is None else {"timeout_s": timeout}


T = TypeVar("T")


def _checked(check: Callable[[], T]) -> T:
    """``check()``'s value; a profiler's refusal of its options or command (ToolOptionError) as a UsageError."""
    from kcoral.profiling.toolargs import ToolOptionError

    try:
        return check()
    except ToolOptionError as exc:
        raise UsageError(str(exc)) from None
