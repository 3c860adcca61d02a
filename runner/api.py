"""HTTP routes: thin. Each one authenticates, calls the store/scheduler, and returns models.

Every error a route can meet is a kcoral.protocol.errors.KcoralError, turned into JSON by runner.app.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import shutil
import time
import typing
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query, Request, Response
from fastapi.responses import FileResponse, StreamingResponse
from pydantic import PlainValidator
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect

from kcoral import __version__
from kcoral.protocol.errors import (
    BadRequest,
    Conflict,
    InfrastructureError,
    NotFound,
    PayloadTooLarge,
    RequestError,
    ShuttingDown,
    Unauthorized,
)
from kcoral.protocol.framing import SERVER, STATUS, STDOUT, Piece, frame
from kcoral.protocol.jobids import JOB_ID
from kcoral.protocol.models import (
    CalibrationFloors,
    CalibrationJobs,
    CalibrationRequest,
    ErrorBody,
    JobSpec,
    JobState,
    JobView,
    OutputFile,
    ProfileSpec,
    PythonSpec,
    Verdict,
)
from kcoral.protocol.spool import Spool
from kcoral.protocol.typeddata import from_data, to_data
from kcoral.runner import wakeqos
from kcoral.runner.archive import extract_upload, safe_output_path
from kcoral.runner.calibrations import calibration_floors, request_calibrations
from kcoral.runner.cluster.placement import slot_rows
from kcoral.runner.enqueue import queue_with_input
from kcoral.runner.envpolicy import validate_client_env
from kcoral.runner.errors import disk_writes
from kcoral.runner.jobfs import remove_tree
from kcoral.runner.jobkinds import kind_for
from kcoral.runner.joblog import read_pieces
from kcoral.runner.leases import gpu_types
from kcoral.runner.services import Services
from kcoral.runner.store import JobPaths, JobRecord
from kcoral.runner.submissions import submission_digest
from kcoral.runner.tarstage import TarStager
from kcoral.runner.warmup import WarmUp

if typing.TYPE_CHECKING:
    from kcoral.tasks.harness.taskdef import Task

#: what an error status means on this API; every error body is protocol.models.ErrorBody
ERROR_STATUSES = {
    400: "bad request: a malformed spec or upload, a forbidden name, a bad parameter",
    401: "no token, or an unknown one",
    404: "no such job (or not yours), no such output",
    409: "the job is not in a state for this",
    413: "the upload is over a budget",
    429: "the token has its cap of waiting jobs; see Retry-After",
    503: "the engine is unavailable, or the server is shutting down; see Retry-After",
    507: "the server's disk is full; see Retry-After",
}


def _spec(body: object) -> JobSpec:
    return from_data(JobSpec, body)  # type: ignore[arg-type]


#: the body of POST /v1/jobs: made by protocol.typeddata.from_data (THE parser: its DataError is our 400),
#: shown in the OpenAPI schema as the union of the specs
SubmittedSpec = Annotated[JobSpec, PlainValidator(_spec, json_schema_input_type=JobSpec)]


def _calibration_request(body: object) -> CalibrationRequest:
    return from_data(CalibrationRequest, body)


#: the body of POST /v1/calibrations, made by the same parser
AskedCalibration = Annotated[
    CalibrationRequest, PlainValidator(_calibration_request, json_schema_input_type=CalibrationRequest)
]


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The error answers a route documents (400, 401 and, with ``statuses``, the others it sends)."""
    return {status: {"model": ErrorBody, "description": ERROR_STATUSES[status]} for status in (400, 401, *statuses)}


#: a route that answers with bytes (the log, an output file), as it documents its 200
BYTES: dict[int | str, dict[str, Any]] = {
    200: {"content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}}
}

router = APIRouter(prefix="/v1")
_LOG_CHUNK = 1 << 16


def services(request: Request) -> Services:
    return request.app.state.services


def owner(request: Request, authorization: str | None = Header(default=None)) -> str:
    return services(request).auth.owner(authorization)


def _own_job(svc: Services, job_id: str, who: str) -> JobRecord:
    if not JOB_ID.fullmatch(job_id):
        raise NotFound(f"no job {job_id}")
    job = svc.store.get(job_id)
    if job.owner != who:
        raise NotFound(f"no job {job_id}")
    return job


def _view(svc: Services, job: JobRecord, order: list[str] | None = None) -> JobView:
    """What the job's owner is shown: the record without environment values (their names only),
    with the queue position of a queued job (``order``: the queue, if known). THE one conversion."""
    position, waiting = None, ""
    if job.state == JobState.queued:
        order = order if order is not None else [j.id for j in svc.scheduler.queue_order()]
        position = order.index(job.id) + 1 if job.id in order else None
        waiting = svc.scheduler.placement.blocked(job.spec.gpus, job.spec.gpu_type, job.spec.cores())
    spec = typing.cast(JobSpec, job.spec)
    if isinstance(spec, PythonSpec | ProfileSpec):
        spec = dataclasses.replace(spec, env={})
    return JobView(
        id=job.id,
        owner=job.owner,
        state=job.state,
        spec=spec,
        env_names=sorted(job.spec.client_env()),
        verdict=job.verdict,
        exit_code=job.exit_code,
        reason=job.reason,
        queue_position=position,
        waiting=waiting,
        image=job.image,
        gpus=list(job.gpus),
        slot=job.slot,
        input_sha256=job.input_sha256,
        input_bytes=job.input_bytes,
        log_bytes=job.log_bytes,
        times=job.times,
        outputs=list(job.outputs),
        submission_digest=job.submission_digest,
        score=job.score,
    )


@router.get("/health", responses=errors())
def health(request: Request, authorization: str | None = Header(default=None)) -> dict[str, object]:
    """Without a valid token (where the server needs one): liveness only. With one: the engine, the
    GPUs, the leases, the images and every limit."""
    svc = services(request)
    try:
        svc.auth.owner(authorization)
    except Unauthorized:
        return {"ok": True, "auth": True}
    return server_facts(svc)


def server_facts(svc: Services) -> dict[str, object]:
    """What /v1/health tells a token holder (and the web page's host view shows)."""
    try:
        image = to_data(svc.executor.image_info(svc.settings.image)) | {"present": True}
    except InfrastructureError as exc:
        image = {"ref": svc.settings.image, "present": False, "error": exc.message}
    leases = svc.placement.describe()
    return {
        "ok": True,
        "version": __version__,
        # for the client's clock check (kcoral doctor), and how much the data dir can still take
        "time": time.time(),
        "data_dir_free_bytes": _free_bytes(svc.settings.data_dir),
        "docker": svc.executor.engine(),
        "gpus": to_data(svc.gpus),
        "nvml": {"available": svc.nvml.available, "error": svc.nvml.error},
        "gpu_mode": svc.executor.gpu_mode() if svc.gpus else "none",
        "toolchain_mounts": list(svc.settings.toolchain_mounts),
        "toolchain_bytecode": svc.bytecode.state(),
        "warm_up": [_warm_up(svc, w) for w in svc.warm_ups],
        # each slot's A/A calibration of each task as it is now (runner.calibrations)
        "calibration": to_data(calibration_floors(svc, current_only=True)),
        "leases": leases,
        # a cluster front end (runner.cluster.placement): every host's slots
        **({"cluster_slots": slot_rows(leases)} if leases.get("cluster") else {}),
        "images": [image],
        "auth": svc.auth.tokens is not None,
        "profiling": _profiling(svc),
        # how fast the host's cores wake from idle while an evaluation runs (runner.wakeqos)
        "wake_latency": wakeqos.holdable(svc.settings.limits.eval_wake_latency_us),
        "limits": svc.settings.limits.__dict__,
        "connection_limits": svc.settings.connections.__dict__,
        # who signs the evaluations' receipts, with which key (every public key: GET /v1/keys)
        "receipts": svc.keys.describe(),
        # a job's /proc/PID/mountinfo shows its mounts' sources as paths on the data dir's filesystem
        "data_dir_own_filesystem": os.path.ismount(svc.settings.data_dir),
    }


def _free_bytes(path: Path) -> int | None:
    try:
        return shutil.disk_usage(path).free
    except OSError:
        return None


def _warm_up(svc: Services, warm: WarmUp) -> dict[str, object]:
    """A warm-up evaluation (runner.warmup) as /v1/health shows it."""
    if not warm.job:
        return {"task": warm.task, "job": None, "state": None, "verdict": None, "reason": warm.error}
    job = svc.store.get(warm.job)
    return {
        "task": warm.task,
        "job": warm.job,
        "state": job.state,
        "verdict": job.verdict,
        "reason": job.reason or warm.error,
        "calibrations": list(warm.calibrations),
    }


def _profiling(svc: Services) -> dict[str, object]:
    try:
        from kcoral.profiling.capabilities import for_server
    except ImportError:
        return {"error": "the profiling package is not installed"}
    return for_server(svc.settings, svc.executor.has_image)


def _taking_work(svc: Services) -> None:
    if not svc.scheduler.accepting:
        raise ShuttingDown("the server is shutting down: submit again once it is back")


@router.post("/jobs", status_code=201, responses=errors(429, 503, 507))
def submit(spec: SubmittedSpec, request: Request, response: Response, who: str = Depends(owner)) -> JobView:
    svc = services(request)
    _taking_work(svc)
    limits = svc.settings.limits
    if spec.image is not None:
        raise BadRequest("the image is chosen by the server; pin an earlier job's image with rerun")
    kept = kind_for(spec.kind).validate(spec, svc.facts())  # as the job keeps it
    words = kept.words()
    if sum(len(a.encode()) + 1 for a in words) > limits.argv_bytes or any("\x00" in a for a in words):
        raise BadRequest(f"argv must be under {limits.argv_bytes} bytes with no NUL bytes")
    if kept.timeout_s > limits.max_timeout_s:
        raise BadRequest(f"timeout {kept.timeout_s:g} s is over this server's limit of {limits.max_timeout_s:g} s")
    validate_client_env(kept.client_env(), limits)
    try:
        svc.placement.check(kept.gpus, kept.gpu_type)
    except BadRequest as exc:
        if kept.gpu_type == spec.gpu_type:
            raise
        raise BadRequest(f"{exc} (the task runs on {kept.gpu_type}: its pack says so)") from None
    job = svc.store.create(who, kept, waiting_cap=limits.queued_per_token)
    response.headers["Location"] = f"/v1/jobs/{job.id}"
    return _view(svc, job)


@router.put("/jobs/{job_id}/input", responses=errors(404, 409, 413, 503, 507))
async def upload_input(job_id: str, request: Request, who: str = Depends(owner)) -> JobView:
    svc = services(request)
    limits = svc.settings.limits
    job = _own_job(svc, job_id, who)
    _taking_work(svc)
    if job.state != JobState.created:
        raise Conflict(f"job {job_id} already has its input (state {job.state})")
    declared = int(request.headers.get("content-length") or 0)
    if declared > limits.upload_bytes:
        raise PayloadTooLarge(f"the upload is {declared} bytes; the limit is {limits.upload_bytes}")
    with svc.uploads.claim(job_id):
        paths = svc.store.paths(job_id)
        staged = TarStager(paths.staging)
        try:
            with disk_writes("cannot store the upload"):
                sha256, size = await _receive(request, paths.tar, limits.upload_bytes, staged)
            await run_in_threadpool(extract_upload, paths.tar, paths.input, limits, staged)
            submission = await run_in_threadpool(submission_digest, job.spec, paths.tar)
        except ClientDisconnect:  # nobody reads an answer: the job and its partial file go, quietly
            svc.store.delete(job_id)
            raise BadRequest("the upload was cut off before its end") from None
        except RequestError:
            svc.store.delete(job_id)
            raise
        except BaseException:  # a full disk, a server stopping: the job stays, waiting for an upload
            paths.tar.unlink(missing_ok=True)
            remove_tree(paths.input)
            raise
        finally:
            remove_tree(paths.staging)  # what was staged and not moved into place
        if not svc.store.mark_queued(job_id, sha256, size, submission):
            remove_tree(paths.input)
            raise Conflict(f"job {job_id} was cancelled while its input was received")
    svc.scheduler.wake()
    return _view(svc, svc.store.get(job_id))


async def _receive(request: Request, path: Path, limit: int, staged: TarStager) -> tuple[str, int]:
    """The request body into ``path``, up to ``limit`` bytes: (sha256, size); its large files
    into ``staged`` as they arrive."""
    with open(path, "wb") as out, Spool(out, also=staged.feed) as spool:  # hashed and written beside the loop
        async for chunk in request.stream():
            if spool.size + len(chunk) > limit:
                raise PayloadTooLarge(f"the upload passed the limit of {limit} bytes")
            await spool.put_async(chunk)
        return await spool.finish_async(), spool.size


@router.post("/jobs/{job_id}/rerun", status_code=201, responses=errors(404, 409, 429, 503, 507))
def rerun_job(job_id: str, request: Request, who: str = Depends(owner)) -> JobView:
    """Run a finished job's submission again with the same image digest (and, for eval, task snapshot)."""
    svc = services(request)
    original = _own_job(svc, job_id, who)
    _taking_work(svc)
    old = svc.store.paths(job_id)
    if original.state == JobState.created or not original.input_sha256 or not old.tar.is_file():
        raise Conflict(f"job {job_id} has no input to run again (it never received its upload)")
    pinned = original.image.digest if original.image and original.image.digest else None
    spec = dataclasses.replace(original.spec, image=pinned)

    def copy_input(new: JobPaths) -> None:
        with disk_writes("cannot copy the job's input"):
            shutil.copyfile(old.tar, new.tar)
            if old.snapshot.is_dir():
                shutil.copytree(old.snapshot, new.snapshot, symlinks=True)

    new_id = queue_with_input(
        svc,
        who,
        spec,
        copy_input,
        original.input_sha256,
        original.input_bytes,
        waiting_cap=svc.settings.limits.queued_per_token,
    )
    return _view(svc, svc.store.get(new_id))


@router.post("/calibrations", status_code=201, responses=errors(429, 503, 507))
def request_calibration(asked: AskedCalibration, request: Request, who: str = Depends(owner)) -> CalibrationJobs:
    """Queue A/A requests of a task as the caller's jobs: the task's own template (never the caller's
    code) evaluated against its baseline, each adding to the noise floor of the slot it runs on."""
    svc = services(request)
    _taking_work(svc)
    return request_calibrations(svc, who, asked)


@router.get("/calibrations", responses=errors())
def list_calibrations(
    request: Request,
    task: str | None = Query(None, max_length=200, description="only this task's (e.g. demo/softmax)"),
    who: str = Depends(owner),
) -> list[CalibrationFloors]:
    """Every slot's A/A calibration of every task version the server has figures of, with its floors now."""
    return calibration_floors(services(request), task)


@router.get("/tasks", responses=errors())
def list_tasks(request: Request, who: str = Depends(owner)) -> list[dict[str, object]]:
    """Every task, and every pack problem that cannot be loaded with its reason (``error``): found so by
    reading it (tasks.packs.recognise), or by running it in the job image (runner.packprobe)."""
    from kcoral.tasks.registry import Unloadable, catalog

    svc = services(request)
    tasks, broken = catalog(svc.settings.tasks_dirs)
    listed: list[dict[str, object]] = []
    for task in tasks:
        known = svc.pack_probe.known(task) if task.pack is not None else None
        why = known.error if known is not None and known.error else _not_served_here(svc, task)
        if why:
            broken.append(Unloadable(task.id, str(task.pack and task.pack.get("format")), task.root, why))
        else:
            listed.append(task.public())
    return listed + [b.public() for b in broken]


def _not_served_here(svc: Services, task: Task) -> str:
    """Why no host of this server can run ``task`` ("" when one can): the GPU types it runs on (its
    pack's gpu_types) are none of theirs."""
    from kcoral.tasks.registry import gpu_type_for, pack_gpu_types

    if not task.gpu_types:
        return ""
    try:
        svc.placement.check(1, gpu_type_for(task, "any", gpu_types(svc.gpus)))
    except BadRequest as exc:
        return f"cannot run on this server: it runs on {pack_gpu_types(task.gpu_types)}; {exc}"
    return ""


@router.get("/tasks/{task_id:path}", responses=errors(404))
def show_task(task_id: str, request: Request, who: str = Depends(owner)) -> dict[str, object]:
    """The task's whole contract (tasks.contract.TaskContract): each public workload's inputs and
    outputs, tolerances, the timing method, the score, the time limit, the image's packages."""
    from kcoral.tasks.contract import task_contract
    from kcoral.tasks.registry import catalog

    svc = services(request)
    tasks, broken = catalog(svc.settings.tasks_dirs)
    task = next((t for t in tasks if t.id == task_id), None)
    if task is None:
        why = next((f": it cannot be loaded: {b.reason}" for b in broken if b.id == task_id), "")
        raise NotFound(f"no task {task_id[:200]!r} on this server{why} (kcoral tasks lists them)")
    if task.pack is not None:  # its inputs and outputs are known once its code has run (in the job image)
        task = svc.pack_probe.with_shapes(task)
    image = svc.settings.image
    found = svc.image_probe.contents(image)
    contract = task_contract(task, svc.settings.limits, image, found.python, found.packages, found.error)
    return contract.document()


@router.get("/jobs", responses=errors())
def list_jobs(
    request: Request,
    limit: int = Query(50, ge=1, le=500, description="the newest this many"),
    before: str | None = Query(None, description="only jobs submitted before this job (a page's last id)"),
    who: str = Depends(owner),
) -> list[JobView]:
    svc = services(request)
    order = [j.id for j in svc.scheduler.queue_order()]  # once for the whole list, not once per job
    if before is not None and not JOB_ID.fullmatch(before):
        raise BadRequest(f"before={before[:100]!r} is not a job id")
    return [_view(svc, j, order) for j in svc.store.list(who, limit, before)]


@router.get("/jobs/{job_id}", responses=errors(404))
def get_job(job_id: str, request: Request, who: str = Depends(owner)) -> JobView:
    svc = services(request)
    return _view(svc, _own_job(svc, job_id, who))


@router.post("/jobs/{job_id}/cancel", responses=errors(404))
def cancel_job(job_id: str, request: Request, who: str = Depends(owner)) -> JobView:
    svc = services(request)
    _own_job(svc, job_id, who)
    return _view(svc, svc.scheduler.cancel(job_id))


#: a followed log is read when it grows or the job changes (runner.changes: the log's writer and the
#: store wake the stream at once); after a read that found new bytes, the next waits this long, so a
#: chatty job's bytes go out in batches, a read per 50 ms at most
_FOLLOW_BATCH_S = 0.05
#: and with no wake at all, the log and the job are read again after this long anyway (a queued job's
#: position, which other jobs' changes move): a quiet job's follower costs the server a read a second,
#: not twenty (measured on the 2-core VM: 1.1% of a core for one follower at 20 reads a second,
#: bench/follow_cost.py), while an evaluation beside it is timed on the same cores
_FOLLOW_IDLE_S = 1.0
#: the reason in the last status frame of a followed job that is deleted under its follower (the
#: server deletes a job whose upload it refused or that was cut off)
DELETED = "the job was deleted: its upload was refused or cut off; submit it again"


#: GET /v1/jobs/{id}/log's parameters, as its schema describes them
_FRAMES_DOC = (
    "each piece framed as Docker frames an attach stream (an 8-byte header: the stream, "
    "1 stdout, 2 stderr, 3 both; three zero bytes; the length, 32-bit big-endian), so stdout and "
    "stderr can be told apart; offsets count the log's bytes, not the headers"
)
_SERVER_LINES_DOC = (
    "with frames: the lines the server wrote into the log itself (an evaluation's report, a note of output "
    "dropped) in frames of stream 4, apart from the job's own (without it they come as stdout)"
)
_STATUS_DOC = (
    "with frames: also frames of stream 16, each the job's view (as GET /v1/jobs/{id} "
    "answers it), sent when its state, queue position or what it waits for changes and after the last byte of a "
    "finished job's log, so the stream's last frame says how the job ended"
)


@router.get("/jobs/{job_id}/log", response_class=StreamingResponse, responses={**BYTES, **errors(404)})
async def job_log(
    job_id: str,
    request: Request,
    offset: int = Query(0, ge=0, le=1 << 62, description="the byte of the log to start at"),
    follow: bool = False,
    frames: bool = Query(False, description=_FRAMES_DOC),
    status: bool = Query(False, description=_STATUS_DOC),
    server_lines: bool = Query(False, description=_SERVER_LINES_DOC),
    who: str = Depends(owner),
) -> StreamingResponse:
    svc = services(request)
    first = _own_job(svc, job_id, who)
    path = svc.store.paths(job_id).log
    with_status = status and frames

    def status_frame(view: JobView) -> bytes:
        return frame(Piece(STATUS, json.dumps(to_data(view), separators=(",", ":")).encode()))

    async def stream() -> AsyncIterator[bytes]:
        pos, shown, job = offset, None, first
        with svc.store.changes.subscribe(job_id) as changes:
            while True:
                changes.clear()  # a change committed from here on ends the pause below
                try:
                    job = svc.store.get(job_id)
                except NotFound:  # deleted under the follower: the body ends whole, saying so
                    if with_status:
                        gone = dataclasses.replace(
                            job, state=JobState.finished, verdict=Verdict.cancelled, reason=DELETED
                        )
                        yield status_frame(_view(svc, gone))
                    return
                finished = job.state == JobState.finished
                if with_status and not finished:
                    view = _view(svc, job)
                    if (view.state, view.queue_position, view.waiting) != shown:
                        shown = (view.state, view.queue_position, view.waiting)
                        yield status_frame(view)
                pieces = read_pieces(path, pos, _LOG_CHUNK)
                read = bool(pieces)
                while pieces:
                    for piece in pieces:
                        pos += len(piece.data)
                        if frames and piece.stream == SERVER and not server_lines:
                            piece = Piece(STDOUT, piece.data)  # a client that does not know the stream
                        yield frame(piece) if frames else piece.data
                    pieces = read_pieces(path, pos, _LOG_CHUNK)
                if finished and with_status:
                    yield status_frame(_view(svc, job))
                if finished or not follow:
                    return
                if read:
                    await asyncio.sleep(_FOLLOW_BATCH_S)  # a wake in the meantime stays set for the next wait
                else:
                    await changes.wait(_FOLLOW_IDLE_S)

    return StreamingResponse(stream(), media_type="application/octet-stream")


@router.get("/jobs/{job_id}/outputs", responses=errors(404))
def list_outputs(job_id: str, request: Request, who: str = Depends(owner)) -> list[OutputFile]:
    return list(_own_job(services(request), job_id, who).outputs)


@router.get("/jobs/{job_id}/outputs/{path:path}", response_class=FileResponse, responses={**BYTES, **errors(404)})
def get_output(job_id: str, path: str, request: Request, who: str = Depends(owner)) -> FileResponse:
    svc = services(request)
    job = _own_job(svc, job_id, who)
    if path not in {o.path for o in job.outputs}:
        raise NotFound(f"job {job_id} has no output file {path!r}")
    return _OutputFile(safe_output_path(svc.store.paths(job_id).outputs, path), media_type="application/octet-stream")


class _OutputFile(FileResponse):
    """A file sent in 1 MiB reads (Starlette's 64 KiB make a thread hop per 64 KiB: ~330 MB/s)."""

    chunk_size = 1 << 20
