"""The web page ``kcoral serve`` serves at ``/ui``: jobs (a live list, each job's live log, outputs,
receipt and image), evaluations (the per-workload table, the timing samples as a plot, telemetry, the
submission's source; two compared, runner.web.candidates), each task's board of best evaluations and
the host (GPUs, leases, drains, the queue per token, images, profilers).

Server-rendered Jinja2 templates (autoescaped: every job-chosen text is escaped), htmx for the live
parts and uPlot for the sample plot, both vendored in ``static/`` (no build step). Auth: the login
form takes a token and keeps it in an HttpOnly, SameSite=Strict cookie; a token sees its own jobs, an
operator's (tokens file: ``NAME TOKEN operator``) every job. Nothing changes state on a GET. Every
POST (log in, log out, cancel) from another site's page is refused 403: its Origin, or its Referer
when it has none, must be this server's own (the pages' Referrer-Policy, same-origin, makes a
browser send them here and nowhere else). The login form carries a login CSRF token, random per
form, in a hidden field and in a cookie of its own: a page elsewhere cannot log a visitor's browser
into its author's account. Cancel carries a CSRF token derived from the session's token.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from fastapi import APIRouter, Query, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from jinja2 import Environment, FileSystemLoader, select_autoescape

from kcoral.protocol.errors import BadRequest, NotFound, Unauthorized
from kcoral.protocol.models import JobState
from kcoral.protocol.printable import printable
from kcoral.runner.archive import safe_output_path
from kcoral.runner.evaluations import board, known_task
from kcoral.runner.jobfs import read_file
from kcoral.runner.store import JobRecord
from kcoral.runner.web import candidates

HERE = Path(__file__).resolve().parent
COOKIE = "kcoral_token"
#: the login form's CSRF token (set with the form, sent back only to POST /ui/login)
LOGIN_COOKIE = "kcoral_login"
#: the most of a job's log the page shows (its end)
LOG_TAIL = 256 << 10
#: the most of a report or receipt the page reads
DOC_BYTES = 8 << 20
STATES = ("created", "queued", "running", "finished")
KINDS = ("python", "eval", "ncu", "iket", "sanitizer", "timeline", "proton")

router = APIRouter(prefix="/ui", include_in_schema=False)
templates = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(default=True))
#: ``{{ text|printable }}``: text a job or a submission chose, its control characters escaped
templates.filters["printable"] = printable
static = StaticFiles(directory=HERE / "static")
#: the CSRF tokens' key: a new one per process (a page from before a restart is refused once)
_CSRF_KEY = secrets.token_bytes(32)


class _Session:
    """Who is looking: the owner the cookie's token stands for, and whether they see every job."""

    def __init__(self, request: Request) -> None:
        self.svc = request.app.state.services
        token = request.cookies.get(COOKIE, "")
        self.owner = self.svc.auth.owner(f"Bearer {token}" if token else None)
        self.operator = self.svc.auth.is_operator(self.owner)
        self.csrf = hmac.new(_CSRF_KEY, f"{self.owner}:{token}".encode(), hashlib.sha256).hexdigest()

    def job(self, job_id: str) -> JobRecord:
        """The job, if this session may see it (the same answer for another's job as for none)."""
        try:
            job: JobRecord = self.svc.store.get(job_id)
        except NotFound:
            raise NotFound(f"no job {printable(job_id[:100])}") from None
        if not self.operator and job.owner != self.owner:
            raise NotFound(f"no job {printable(job_id[:100])}")
        return job

    def jobs(self, limit: int = 200) -> list[JobRecord]:
        found: list[JobRecord] = self.svc.store.list(None if self.operator else self.owner, limit)
        return found


def _page(name: str, session: _Session | None, **values: Any) -> HTMLResponse:
    html = templates.get_template(name).render(session=session, **values)
    return HTMLResponse(html, headers=_HEADERS)


#: no framing, no inline script from elsewhere, no referrer for other sites (the page shows what jobs
#: chose; and a form's POST must carry its Origin: under no-referrer a browser sends "null")
_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
    "frame-ancestors 'none'; form-action 'self'",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def _session(request: Request) -> _Session | None:
    try:
        return _Session(request)
    except Unauthorized:
        return None


def _login_needed() -> RedirectResponse:
    return RedirectResponse("/ui/login", status_code=303)


# --- cross-site requests and login ---------------------------------------------------------------


def _cross_site(request: Request) -> Response | None:
    """403 for a state-changing request from another site's page: its Origin, or its Referer when it
    has no Origin, is not this server's own origin. One with neither (not a browser's form post) is
    left to the form's CSRF token."""
    own = f"{request.url.scheme}://{request.url.netloc}"
    for header in ("origin", "referer"):
        said = request.headers.get(header)
        if said is None:
            continue
        came_from = _origin(said)
        if came_from is None or came_from != _origin(own):
            name = header.capitalize()
            return Response(
                f"refused: a cross-site request (its {name} {printable(said[:200])!r} is not this server's "
                f"origin, {own}); use the form on this server's own page",
                status_code=403,
                media_type="text/plain",
                headers=_HEADERS,
            )
        return None
    return None


def _origin(url: str) -> tuple[str, str, int] | None:
    """An origin (scheme, host, port) from a URL or an Origin header; None for "null" or nonsense."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        return None
    return scheme, parts.hostname.lower(), port or (443 if scheme == "https" else 80)


def _login_page(error: str = "", status: int = 200) -> HTMLResponse:
    """The login form with a fresh login CSRF token, in its hidden field and in its cookie."""
    token = secrets.token_urlsafe(32)
    page = _page("login.html", None, error=error, login_csrf=token)
    page.status_code = status
    page.set_cookie(LOGIN_COOKIE, token, httponly=True, samesite="strict", path="/ui/login")
    return page


@router.get("/login")
def login_form(request: Request) -> HTMLResponse:
    return _login_page()


async def _form(request: Request) -> dict[str, str]:
    """A urlencoded form's fields (the first value of each)."""
    body = await request.body()
    if len(body) > 4096:
        raise BadRequest("form too large")
    return {name: values[0] for name, values in parse_qs(body.decode(errors="replace")).items()}


@router.post("/login")
async def login(request: Request) -> Response:
    refused = _cross_site(request)
    if refused is not None:
        return refused
    form = await _form(request)
    sent, kept = form.get("csrf", ""), request.cookies.get(LOGIN_COOKIE, "")
    if not sent or not hmac.compare_digest(sent.encode(), kept.encode()):
        return _login_page("this login form is stale or not this server's: log in again here", 403)
    token = form.get("token", "").strip()
    svc = request.app.state.services
    try:
        svc.auth.owner(f"Bearer {token}")
    except Unauthorized:
        return _login_page("this server does not know that token", 401)
    answer = RedirectResponse("/ui/jobs", status_code=303)
    answer.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/ui")
    answer.delete_cookie(LOGIN_COOKIE, path="/ui/login")
    return answer


@router.post("/logout")
def logout(request: Request) -> Response:
    refused = _cross_site(request)
    if refused is not None:
        return refused
    answer = RedirectResponse("/ui/login", status_code=303)
    answer.delete_cookie(COOKIE, path="/ui")
    return answer


# --- jobs ---------------------------------------------------------------------------------------


@router.get("")
def home() -> RedirectResponse:
    return RedirectResponse("/ui/jobs", status_code=303)


@router.get("/jobs")
def jobs_page(request: Request, state: str = "", kind: str = "", task: str = "") -> Response:
    session = _session(request)
    if session is None:
        return _login_needed()
    filters = _filters(state, kind, task)
    return _page("jobs.html", session, rows=_rows(session, filters), filters=filters, states=STATES, kinds=KINDS)


@router.get("/jobs/rows")
def jobs_rows(request: Request, state: str = "", kind: str = "", task: str = "") -> Response:
    session = _session(request)
    if session is None:
        return Response(status_code=401)
    return _page("job_rows.html", session, rows=_rows(session, _filters(state, kind, task)))


def _filters(state: str, kind: str, task: str) -> dict[str, str]:
    if state and state not in STATES:
        raise BadRequest(f"state must be one of {', '.join(STATES)}")
    if kind and kind not in KINDS:
        raise BadRequest(f"kind must be one of {', '.join(KINDS)}")
    return {"state": state, "kind": kind, "task": task[:200]}


def _rows(session: _Session, filters: dict[str, str]) -> list[dict[str, Any]]:
    rows = []
    for job in session.jobs():
        task = getattr(job.spec, "task", "") or ""
        if filters["state"] and job.state.value != filters["state"]:
            continue
        if filters["kind"] and job.spec.kind.value != filters["kind"]:
            continue
        if filters["task"] and filters["task"] not in task:
            continue
        rows.append(_row(session, job, task))
    return rows


def _row(session: _Session, job: JobRecord, task: str) -> dict[str, Any]:
    times = job.times
    ran = (times.finished or time.time()) - times.started if times.started else None
    summary = _summary(session, job) if task else {}
    label = getattr(job.spec, "label", "")
    return {
        "job": job,
        "kind": job.spec.kind.value,
        "what": f"{task} ({printable(label)})" if task and label else task or " ".join(job.spec.words())[:120],
        "outcome": job.verdict.value if job.verdict else job.state.value,
        "created": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(times.created)),
        "ran": f"{ran:.1f} s" if ran is not None else "",
        "score": f"{summary['speedup']:.4f}x" if isinstance(summary.get("speedup"), int | float) else "",
    }


@router.get("/jobs/{job_id}")
def job_page(request: Request, job_id: str) -> Response:
    session = _session(request)
    if session is None:
        return _login_needed()
    job = session.job(job_id)
    report, receipt = _report(session, job), _doc(session, job, "receipt.json")
    return _page(
        "job.html",
        session,
        job=job,
        live=job.state != JobState.finished,
        report=report,
        receipt=receipt,
        plot=json.dumps(_plot_series(receipt)),
        row=_row(session, job, getattr(job.spec, "task", "") or ""),
        pictures=[o.path for o in job.outputs if o.path.endswith(".png")],
        source=candidates.source_view(session.svc, job),
        links=candidates.compare_links(session.svc, job),
    )


@router.get("/jobs/{job_id}/log")
def job_log(request: Request, job_id: str) -> Response:
    """The end of the job's log (escaped); htmx swaps it in while the job runs."""
    session = _session(request)
    if session is None:
        return Response(status_code=401)
    job = session.job(job_id)
    text, size = _tail(session.svc.store.paths(job.id).log, LOG_TAIL)
    headers = {} if job.state != JobState.finished else {"HX-Trigger": "job-finished"}
    page = _page("log.html", session, text=printable(text, newlines=True), cut=size > LOG_TAIL, job=job)
    page.headers.update(headers)
    return page


def _tail(path: Path, most: int) -> tuple[str, int]:
    """The last ``most`` bytes of a log (as text), and the log's size; ("", 0) before it exists."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            f.seek(max(0, size - most))
            return f.read(most).decode(errors="replace"), size
    except FileNotFoundError:
        return "", 0


@router.get("/jobs/{job_id}/outputs/{path:path}")
def job_output(request: Request, job_id: str, path: str) -> Response:
    session = _session(request)
    if session is None:
        return Response(status_code=401)
    job = session.job(job_id)
    if path not in {o.path for o in job.outputs}:
        raise NotFound(f"job {job.id} has no output file {printable(path[:200])!r}")
    where = safe_output_path(session.svc.store.paths(job.id).outputs, path)
    return FileResponse(where, media_type="application/octet-stream", filename=Path(path).name)


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@router.get("/jobs/{job_id}/image/{path:path}")
def job_image(request: Request, job_id: str, path: str) -> Response:
    """A PNG output shown in the job's page (an IKET timeline, a plot the job drew): only a file that
    is named .png and starts as a PNG, sent as image/png that the browser may not sniff as anything else."""
    session = _session(request)
    if session is None:
        return Response(status_code=401)
    job = session.job(job_id)
    if not path.endswith(".png") or path not in {o.path for o in job.outputs}:
        raise NotFound(f"job {job.id} has no PNG output {printable(path[:200])!r}")
    data = read_file(session.svc.store.paths(job.id).outputs, path, DOC_BYTES)
    if not data.startswith(PNG_SIGNATURE):
        raise NotFound(f"{printable(path[:200])!r} is not a PNG")
    headers = {"X-Content-Type-Options": "nosniff", "Content-Security-Policy": "default-src 'none'"}
    return Response(data, media_type="image/png", headers=headers)


@router.post("/jobs/{job_id}/cancel")
async def cancel(request: Request, job_id: str) -> Response:
    refused = _cross_site(request)
    if refused is not None:
        return refused
    csrf = (await _form(request)).get("csrf", "")
    session = _session(request)
    if session is None:
        return Response(status_code=401)
    if not hmac.compare_digest(csrf, session.csrf):
        return Response("this form is stale or not this page's: reload the job's page", status_code=403)
    job = session.job(job_id)
    session.svc.scheduler.cancel(job.id)
    return RedirectResponse(f"/ui/jobs/{job.id}", status_code=303)


# --- evaluations --------------------------------------------------------------------------------


def _doc(session: _Session, job: JobRecord, name: str) -> dict[str, Any]:
    """An evaluation's document (report.json, receipt.json), which its judge wrote; {} when it has none
    or it does not parse. Only an evaluation's: any other job chooses its outputs' names and content,
    and a report.json of its own must not show as a score."""
    if job.spec.kind.value != "eval" or name not in {o.path for o in job.outputs}:
        return {}
    try:
        data = json.loads(read_file(session.svc.store.paths(job.id).outputs, name, DOC_BYTES))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _report(session: _Session, job: JobRecord) -> dict[str, Any]:
    return _doc(session, job, "report.json")


#: finished evaluations' summaries (a finished job's report does not change), for the list's rows
_SUMMARIES: dict[str, dict[str, Any]] = {}
_SUMMARIES_KEPT = 2000


def _summary(session: _Session, job: JobRecord) -> dict[str, Any]:
    """The report's summary of an evaluation (read once per finished job, not at every refresh)."""
    if job.id in _SUMMARIES:
        return _SUMMARIES[job.id]
    summary = _report(session, job).get("summary")
    summary = summary if isinstance(summary, dict) else {}
    if job.state == JobState.finished:
        if len(_SUMMARIES) >= _SUMMARIES_KEPT:
            _SUMMARIES.pop(next(iter(_SUMMARIES)))
        _SUMMARIES[job.id] = summary
    return summary


def _plot_series(receipt: dict[str, Any]) -> dict[str, dict[str, list[float]]]:
    """workload -> {"baseline": [ms...], "kernel": [ms...]} for the sample plot."""
    out = {}
    for workload, timing in (receipt.get("timings") or {}).items():
        if isinstance(timing, dict):
            base, kern = timing.get("baseline_ms") or [], timing.get("kernel_ms") or []
            out[str(workload)] = {
                "baseline": [float(x) for x in base if isinstance(x, int | float)],
                "kernel": [float(x) for x in kern if isinstance(x, int | float)],
            }
    return out


@router.get("/compare")
def compare(request: Request, a: str = Query(..., max_length=200), b: str = Query(..., max_length=200)) -> Response:
    """Evaluation B against evaluation A (ids, their starts, or labels): runner.comparison's view."""
    session = _session(request)
    if session is None:
        return _login_needed()
    owner = None if session.operator else session.owner
    return _page("compare.html", session, **candidates.compare_values(session.svc, a, b, owner))


@router.get("/tasks")
def tasks_page(request: Request) -> Response:
    from kcoral.tasks.registry import all_tasks

    session = _session(request)
    if session is None:
        return _login_needed()
    found = all_tasks(session.svc.settings.tasks_dirs)
    return _page("tasks.html", session, tasks=[t.public() for t in found])


@router.get("/tasks/{task_id:path}")
def task_board(request: Request, task_id: str) -> Response:
    """The task's board: the best verified evaluation of each token this session may see."""
    session = _session(request)
    if session is None:
        return _login_needed()
    svc, task_id = session.svc, task_id[:200]
    known_task(svc.store, svc.settings.tasks_dirs, task_id, session.owner)
    found = board(svc.store, task_id, session.owner, session.operator, svc.settings.public_board)
    return _page("board.html", session, board=found)


# --- the host -----------------------------------------------------------------------------------


@router.get("/host")
def host(request: Request) -> Response:
    from kcoral.runner.api import server_facts

    session = _session(request)
    if session is None:
        return _login_needed()
    svc = session.svc
    facts = server_facts(svc)
    telemetry = {g.index: svc.nvml.telemetry(g.index) or {} for g in svc.gpus}
    queued: dict[str, int] = {}
    for job in svc.store.in_state(JobState.queued):
        if session.operator or job.owner == session.owner:
            queued[job.owner] = queued.get(job.owner, 0) + 1
    return _page("host.html", session, facts=facts, telemetry=telemetry, queued=queued)
