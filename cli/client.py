"""HTTP client for the kcoral server API (``/v1``). No typer here: usable from plain Python.

    with KcoralClient("http://127.0.0.1:8901", token="...") as kc:
        view = kc.submit(PythonSpec(argv=["bench.py"]), tarball.path)
        for piece in kc.follow_log(view.id):
            (sys.stderr if piece.stream == STDERR else sys.stdout).buffer.write(piece.data)
        final = kc.status(view.id)

Every HTTP or transport failure becomes a :mod:`kcoral.protocol.errors` class in one place, :meth:`_translated`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote, urlsplit

import httpx

from kcoral.cli.paths import output_destination, safe_output_path
from kcoral.protocol.errors import (
    KcoralError,
    ServerError,
    ServerUnreachable,
    StillRunning,
    UsageError,
    from_answer,
)
from kcoral.protocol.evaluations import Board, Comparison, History
from kcoral.protocol.framing import STATUS, FrameReader, Piece
from kcoral.protocol.jobids import JOB_ID
from kcoral.protocol.models import CalibrationFloors, CalibrationJobs, JobState, JobView, OutputFile, SpecBase
from kcoral.protocol.typeddata import DataError, from_data, to_data

if TYPE_CHECKING:
    from kcoral.protocol.receipts import ServerKeys
    from kcoral.tasks.documents import TaskContract

#: what a piece of a job id may be (a prefix the user typed)
ID_PIECE = re.compile(r"[0-9a-f-]{1,26}")

__all__ = ["KcoralClient", "ProgressCallback", "normalise_base_url"]

ProgressCallback = Callable[[int, int], None]
"""Called as ``progress(bytes_sent, bytes_total)`` while the input tar is uploaded."""

CHUNK = 1024 * 1024
USER_AGENT = "kcoral-cli/0.1"
_M = TypeVar("_M")


def normalise_base_url(url: str) -> str:
    """``url`` without trailing slashes; UsageError unless it is an http(s) URL with a host."""
    url = (url or "").strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(f"bad server URL {url!r}: expected http://HOST:PORT or https://HOST")
    if url.endswith("/v1"):
        url = url[: -len("/v1")]
    return url


class KcoralClient:
    """A connection to one kcoral server. Use as a context manager or call :meth:`close`."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        timeout: float = 30.0,
        *,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = normalise_base_url(base_url)
        self.timeout = timeout
        headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        # a plain-http server never gets a TLS handshake (redirects are not followed), so its client
        # skips loading the certificate store: ~110 ms of every command
        tls = urlsplit(self.base_url).scheme == "https"
        self._http = httpx.Client(
            base_url=self.base_url,
            headers=headers,
            timeout=timeout,
            transport=transport,
            verify=tls,
            follow_redirects=False,
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> KcoralClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- the one place where HTTP failures become protocol errors --------------------------------------

    @contextlib.contextmanager
    def _translated(self, what: str) -> Iterator[None]:
        """Run a request; turn transport errors and non-2xx answers into :mod:`kcoral.protocol.errors` classes."""
        try:
            yield
        except httpx.HTTPStatusError as exc:
            raise _error_from_response(exc.response, what) from None
        except httpx.TimeoutException:
            raise ServerUnreachable(f"{what}: timed out waiting for {self.base_url}") from None
        except httpx.TransportError as exc:
            detail = str(exc) or type(exc).__name__
            raise ServerUnreachable(f"{what}: cannot reach {self.base_url}: {detail}") from None

    @staticmethod
    def _check(response: httpx.Response) -> None:
        """Raise httpx.HTTPStatusError (translated by :meth:`_translated`) unless the answer is a 2xx."""
        if not response.is_success:
            response.read()
            raise httpx.HTTPStatusError("status", request=response.request, response=response)

    def _call(self, method: str, path: str, what: str, **kwargs: Any) -> Any:
        """One request with a JSON answer; returns the decoded JSON."""
        with self._translated(what):
            response = self._http.request(method, path, **kwargs)
            self._check(response)
        try:
            return response.json()
        except ValueError:
            raise ServerError(f"{what}: answer is not JSON", status=response.status_code) from None

    # ---- API ---------------------------------------------------------------------------------------------

    def health(self) -> dict[str, Any]:
        """GET /v1/health: docker status, gpus, gpu_mode, slots, images, drained GPUs."""
        data = self._call("GET", "/v1/health", "health")
        if not isinstance(data, dict):
            raise ServerError("health: expected a JSON object")
        return data

    def gpus(self) -> list[dict[str, Any]]:
        """The ``gpus`` list of /v1/health, entries as the server sends them."""
        gpus = self.health().get("gpus") or []
        return [g if isinstance(g, dict) else {"gpu": g} for g in gpus]

    def create_job(self, spec: SpecBase) -> JobView:
        """POST /v1/jobs: the job exists in state ``created``, waiting for its input."""
        data = self._call("POST", "/v1/jobs", "submit", json=to_data(spec))
        return _parse(JobView, data, "submit")

    def upload_input(self, job_id: str, tar_path: str | Path, progress: ProgressCallback | None = None) -> JobView:
        """PUT /v1/jobs/{id}/input: stream the tar; the job becomes ``queued``."""
        size = os.path.getsize(tar_path)

        def body() -> Iterator[bytes]:
            sent = 0
            with open(tar_path, "rb") as f:
                while chunk := f.read(CHUNK):
                    sent += len(chunk)
                    yield chunk
                    if progress is not None:
                        progress(sent, size)

        headers = {"Content-Type": "application/x-tar", "Content-Length": str(size)}
        # The server validates the tar before answering: allow it more than the usual read timeout.
        timeout = httpx.Timeout(self.timeout, read=max(self.timeout, 300.0))
        data = self._call(
            "PUT", f"/v1/jobs/{_q(job_id)}/input", "upload", content=body(), headers=headers, timeout=timeout
        )
        return _parse(JobView, data, "upload")

    def submit(
        self,
        spec: SpecBase,
        tar_path: str | Path,
        progress: ProgressCallback | None = None,
        on_created: Callable[[JobView], None] | None = None,
    ) -> JobView:
        """Create the job and upload its input; if the upload fails the job is cancelled (best effort)."""
        view = self.create_job(spec)
        if on_created is not None:
            on_created(view)
        try:
            return self.upload_input(view.id, tar_path, progress)
        except BaseException:
            with contextlib.suppress(KcoralError):
                self.cancel(view.id)
            raise

    def status(self, job_id: str) -> JobView:
        """GET /v1/jobs/{id}."""
        return _parse(JobView, self._call("GET", f"/v1/jobs/{_q(job_id)}", "status"), "status")

    def jobs(self, limit: int = 50, before: str | None = None) -> list[JobView]:
        """GET /v1/jobs: the caller's newest ``limit`` jobs (at most 500 a call), newest first; with
        ``before`` (a job id), those submitted before it."""
        params: dict[str, Any] = {"limit": limit}
        if before is not None:
            params["before"] = before
        data = self._call("GET", "/v1/jobs", "jobs", params=params)
        return _parse_list(JobView, data, "jobs")

    def all_jobs(self, page: int = 500) -> Iterator[JobView]:
        """Every job of the caller, newest first, a page at a time."""
        before = None
        while True:
            views = self.jobs(page, before)
            yield from views
            if len(views) < page:
                return
            before = views[-1].id

    def resolve(self, job: str) -> str:
        """A job id from what a person typed: the whole id, or an unambiguous prefix of it, or of the
        random part after its last ``-`` (``22010e4f``). UsageError when none or several match."""
        if JOB_ID.fullmatch(job):
            return job
        if not job or not ID_PIECE.fullmatch(job):
            raise UsageError(f"{job!r} is not a job id (like 20261201-162819-22010e4f) or a piece of one")
        found = [v.id for v in self.all_jobs() if v.id.startswith(job) or v.id.rsplit("-", 1)[-1].startswith(job)]
        if len(found) == 1:
            return found[0]
        if not found:
            raise UsageError(f"no job of yours matches {job!r}")
        raise UsageError(f"{job!r} matches {len(found)} jobs ({', '.join(found[:5])}...): give more of the id")

    def wait(
        self,
        job_id: str,
        timeout: float | None = None,
        poll_s: float = 0.5,
        on_change: Callable[[JobView], None] | None = None,
    ) -> JobView:
        """Poll the job until it has finished and return its view; StillRunning after ``timeout``
        seconds. ``on_change`` sees each view whose state, queue position or wait differs from the last."""
        deadline = None if timeout is None else time.monotonic() + timeout
        last: tuple[object, ...] | None = None
        delay = 0.05
        while True:
            view = self.status(job_id)
            if on_change is not None and (view.state, view.queue_position, view.waiting) != last:
                last = (view.state, view.queue_position, view.waiting)
                on_change(view)
            if view.state == JobState.finished:
                return view
            if deadline is not None and time.monotonic() >= deadline:
                raise StillRunning(f"job {job_id} is still {view.state} after {timeout:g} s")
            time.sleep(delay if deadline is None else max(0.0, min(delay, deadline - time.monotonic())))
            delay = min(delay * 1.5, poll_s)

    def download_outputs(self, view: JobView, dest_dir: str | Path) -> list[Path]:
        """Every output of a finished job into ``dest_dir``, each checked against its sha256."""
        return [self.download(view.id, out.path, dest_dir, out.sha256) for out in view.outputs]

    def cancel(self, job_id: str) -> JobView:
        """POST /v1/jobs/{id}/cancel."""
        return _parse(JobView, self._call("POST", f"/v1/jobs/{_q(job_id)}/cancel", "cancel"), "cancel")

    def rerun(self, job_id: str) -> JobView:
        """POST /v1/jobs/{id}/rerun: a new queued job with the same submission, pinned image (and task)."""
        return _parse(JobView, self._call("POST", f"/v1/jobs/{_q(job_id)}/rerun", "rerun"), "rerun")

    def calibrate(self, task: str, requests: int | None = None) -> CalibrationJobs:
        """POST /v1/calibrations: queue A/A requests of ``task`` (the server's default number when None)."""
        body: dict[str, Any] = {"task": task} if requests is None else {"task": task, "requests": requests}
        return _parse(CalibrationJobs, self._call("POST", "/v1/calibrations", "calibrate", json=body), "calibrate")

    def calibrations(self, task: str | None = None) -> list[CalibrationFloors]:
        """GET /v1/calibrations: each slot's A/A calibration (of ``task`` alone, when given) and its floors."""
        params = {"task": task} if task is not None else {}
        data = self._call("GET", "/v1/calibrations", "calibrations", params=params)
        return _parse_list(CalibrationFloors, data, "calibrations")

    def history(self, task: str, limit: int = 20) -> History:
        """GET /v1/evaluations: the caller's newest ``limit`` evaluations of ``task``, the best so far marked."""
        data = self._call("GET", "/v1/evaluations", "history", params={"task": task, "limit": limit})
        return _parse(History, data, "history")

    def compare(self, a: str, b: str) -> Comparison:
        """GET /v1/evaluations/compare: evaluation ``b`` against ``a`` (job ids, their starts, or labels)."""
        return _parse(
            Comparison, self._call("GET", "/v1/evaluations/compare", "compare", params={"a": a, "b": b}), "compare"
        )

    def best(self, task: str) -> Board:
        """GET /v1/evaluations/best: the best so far of each token on ``task`` that the caller may see."""
        return _parse(Board, self._call("GET", "/v1/evaluations/best", "best", params={"task": task}), "best")

    def keys(self) -> ServerKeys:
        """GET /v1/keys: the server's id and every public key it signs receipts with (no token needed)."""
        from kcoral.protocol.receipts import ServerKeys  # cryptography: only for the commands that verify

        return _parse(ServerKeys, self._call("GET", "/v1/keys", "keys"), "keys")

    def tasks(self) -> list[dict[str, Any]]:
        """GET /v1/tasks: the evaluation tasks, entries as the server sends them."""
        data = self._call("GET", "/v1/tasks", "tasks")
        if not isinstance(data, list) or not all(isinstance(t, dict) for t in data):
            raise ServerError("tasks: expected a JSON list of objects")
        return data

    def task(self, task_id: str) -> TaskContract:
        """GET /v1/tasks/{id}: the task's whole contract."""
        data = self._call("GET", f"/v1/tasks/{quote(task_id, safe='/')}", "task")
        from kcoral.tasks.documents import DocumentError, TaskContract, parse

        try:
            return parse(TaskContract, data)
        except DocumentError as exc:
            raise ServerError(f"task {task_id}: not what a kcoral server sends: {exc}") from None

    def read_output(
        self, job_id: str, path: str, expected_sha256: str | None = None, limit: int = 64 * 1024 * 1024
    ) -> bytes:
        """Output ``path`` of a job, in memory (at most ``limit`` bytes); its sha256 is checked when given."""
        url = f"/v1/jobs/{_q(job_id)}/outputs/{quote(str(safe_output_path(path)), safe='/')}"
        data = bytearray()
        with self._translated(f"download {path}"), self._http.stream("GET", url) as response:
            self._check(response)
            for chunk in response.iter_bytes():  # as read: gathering them into CHUNKs was a copy more
                data += chunk
                if len(data) > limit:
                    raise ServerError(f"download {path}: larger than {limit} bytes")
        got = hashlib.sha256(data).hexdigest()
        if expected_sha256 and got != expected_sha256.lower():
            raise ServerError(f"download {path}: sha256 mismatch (got {got[:12]}, expected {expected_sha256[:12]})")
        return bytes(data)

    def outputs(self, job_id: str) -> list[OutputFile]:
        """GET /v1/jobs/{id}/outputs."""
        data = self._call("GET", f"/v1/jobs/{_q(job_id)}/outputs", "outputs")
        return _parse_list(OutputFile, data, "outputs")

    def follow_log(
        self,
        job_id: str,
        offset: int = 0,
        *,
        follow: bool = True,
        reconnects: int = 5,
        on_status: Callable[[JobView], None] | None = None,
    ) -> Iterator[Piece]:
        """The job's log from byte ``offset``, piece by piece, each with its stream (stdout, stderr).

        With ``follow`` the stream ends when the job has finished and everything was sent; a connection
        that drops midway is reopened at the right offset (up to ``reconnects`` times in a row).
        With ``on_status``, the server also sends the job's view in the same stream, when its state or
        queue position changes and once the job has finished (after its last log byte):
        ``on_status`` gets each one. A server without that sends none.
        """
        left = reconnects
        opened = [False]  # set once the server has answered 200: only then is a drop worth retrying
        while True:
            try:
                for piece in self._log_stream(job_id, offset, follow, opened, on_status is not None):
                    left = reconnects
                    if piece.stream == STATUS:
                        assert on_status is not None
                        on_status(_status_frame(piece.data, job_id))
                        continue
                    offset += len(piece.data)
                    yield piece
                return
            except ServerUnreachable:
                if not (follow and opened[0]) or left <= 0:
                    raise
                left -= 1
                time.sleep(min(2.0 ** (reconnects - left - 1), 10.0))

    def _log_stream(self, job_id: str, offset: int, follow: bool, opened: list[bool], status: bool) -> Iterator[Piece]:
        params = {"offset": str(offset), "frames": "true", "server_lines": "true"}
        if follow:
            params["follow"] = "true"
        if status:
            params["status"] = "true"
        kwargs: dict[str, Any] = {"params": params}
        if follow:  # a quiet job sends nothing for a long time: no read timeout
            kwargs["timeout"] = httpx.Timeout(self.timeout, read=None)
        frames = FrameReader()
        with (
            self._translated("log"),
            self._http.stream("GET", f"/v1/jobs/{_q(job_id)}/log", **kwargs) as response,
        ):
            self._check(response)
            opened[0] = True
            for chunk in response.iter_bytes():
                try:
                    yield from frames.feed(chunk)
                except ValueError as exc:
                    raise ServerError(f"log of {job_id}: {exc}") from None

    def download(self, job_id: str, path: str, dest_dir: str | Path, expected_sha256: str | None = None) -> Path:
        """Stream output ``path`` to ``dest_dir/path``; verify its sha256 when given. Returns the file.

        Paths with ``..`` or absolute ones are refused (ServerError); the file appears only once complete.
        """
        from kcoral.protocol.spool import Spool  # a download's own import (a thread pool): not every command's

        target = output_destination(Path(dest_dir), path)
        target.parent.mkdir(parents=True, exist_ok=True)
        url = f"/v1/jobs/{_q(job_id)}/outputs/{quote(str(safe_output_path(path)), safe='/')}"
        fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
        try:
            with (
                os.fdopen(fd, "wb") as out,
                Spool(out) as spool,  # hashed and written beside the reads
                self._translated(f"download {path}"),
                self._http.stream("GET", url) as response,
            ):
                self._check(response)
                for chunk in response.iter_bytes():  # as read (64 KiB): no copy into CHUNKs
                    spool.put(chunk)
                got = spool.finish()
            if expected_sha256 and got != expected_sha256.lower():
                raise ServerError(f"download {path}: sha256 mismatch (got {got[:12]}, expected {expected_sha256[:12]})")
            os.replace(tmp_name, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)
            raise
        return target


def _q(job_id: str) -> str:
    return quote(job_id, safe="")


def _error_from_response(response: httpx.Response, what: str) -> KcoralError:
    """The error a non-2xx answer stands for (kcoral.protocol.errors.from_answer), with the server's own
    message when it sent one."""
    status = response.status_code
    code, message = "", ""
    try:
        body = response.json()
        if isinstance(body, dict):
            code = str(body.get("error") or "")
            message = str(body.get("message") or body.get("detail") or "")
    except ValueError:
        message = response.text.strip()[:300]
    text = f"{what}: {message or response.reason_phrase or 'error'} (HTTP {status})"
    return from_answer(status, code, text, retry_after=_seconds(response.headers.get("retry-after")))


def _seconds(header: str | None) -> float | None:
    """A Retry-After header given in seconds (the form kcoral servers send), else None: a date, or a
    number no pause can be (negative, infinite, NaN), which a caller's sleep would choke on."""
    try:
        seconds = float(header) if header is not None else None
    except ValueError:
        return None
    return seconds if seconds is not None and 0 <= seconds < math.inf else None


def _parse(model: type[_M], data: Any, what: str) -> _M:
    try:
        return from_data(model, data)
    except DataError as exc:
        raise ServerError(f"{what}: unexpected answer from the server: {exc}") from None


def _status_frame(data: bytes, job_id: str) -> JobView:
    """A STATUS frame of a log stream: the job's view."""
    try:
        document = json.loads(data)
    except ValueError:
        raise ServerError(f"log of {job_id}: a status frame that is not JSON") from None
    return _parse(JobView, document, f"log of {job_id}")


def _parse_list(model: type[_M], data: Any, what: str) -> list[_M]:
    return _parse(list[model], data, what)  # type: ignore[valid-type]
