"""HTTP routes: thin. Each one authenticates, calls the store/scheduler, and returns models.

Every error a route can meet is a runner.errors.KcoralError, turned into JSON by runner.app.
"""

from __future__ import annotations

import asyncio
import hashlib
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

from fastapi import APIRouter, Depends, Header, Request, Response
from fastapi.responses import FileResponse, StreamingResponse
from starlette.concurrency import run_in_threadpool

from kcoral.runner.archive import extract_upload, safe_output_path
from kcoral.runner.envpolicy import validate_client_env
from kcoral.runner.errors import (
    BadRequest,
    Conflict,
    InfrastructureError,
    NotFound,
    PayloadTooLarge,
    RequestError,
    TooManyJobs,
)
from kcoral.runner.jobkinds import kind_for
from kcoral.runner.models import JobSpec, JobState, JobView, OutputFile
from kcoral.runner.services import Services
from kcoral.runner.store import JobRecord

router = APIRouter(prefix="/v1")
_LOG_CHUNK = 1 << 16


def services(request: Request) -> Services:
    return request.app.state.services


def owner(request: Request, authorization: str | None = Header(default=None)) -> str:
    return services(request).auth.owner(authorization)


def _own_job(svc: Services, job_id: str, who: str) -> JobRecord:
    job = svc.store.get(job_id)
    if job.owner != who:
        raise NotFound(f"no job {job_id}")
    return job


def _view(svc: Services, job: JobRecord, order: list[str] | None = None) -> JobView:
    """What the job's owner is shown: the record without environment values (their names only),
    with the queue position of a queued job (``order``: the queue, if known). THE one conversion."""
    position = None
    if job.state == JobState.queued:
        order = order if order is not None else [j.id for j in svc.scheduler.queue_order()]
        position = order.index(job.id) + 1 if job.id in order else None
    spec = job.spec
    if "env" in type(spec).model_fields:
        spec = spec.model_copy(update={"env": {}})
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
        image=job.image,
        gpus=list(job.gpus),
        slot=job.slot,
        input_sha256=job.input_sha256,
        input_bytes=job.input_bytes,
        log_bytes=job.log_bytes,
        times=job.times,
        outputs=list(job.outputs),
    )


@router.get("/health")
def health(request: Request) -> dict[str, object]:
    svc = services(request)
    try:
        image = svc.executor.image_info(svc.settings.image).model_dump() | {"present": True}
    except InfrastructureError as exc:
        image = {"ref": svc.settings.image, "present": False, "error": exc.message}
    return {
        "docker": svc.executor.engine(),
        "gpus": [g.model_dump() for g in svc.gpus],
        "nvml": {"available": svc.nvml.available, "error": svc.nvml.error},
        "gpu_mode": svc.executor.gpu_mode() if svc.gpus else "none",
        "toolchain_mounts": list(svc.settings.toolchain_mounts),
        "leases": svc.placement.describe(),
        "images": [image],
        "auth": svc.auth.tokens is not None,
        "profiling": _profiling(svc),
        "limits": svc.settings.limits.__dict__,
    }


def _profiling(svc: Services) -> dict[str, object]:
    try:
        from kcoral.profiling.capabilities import for_server
    except ImportError:
        return {"error": "the profiling package is not installed"}
    return for_server(svc.settings, svc.executor.has_image)


@router.post("/jobs", status_code=201)
def submit(spec: JobSpec, request: Request, response: Response, who: str = Depends(owner)) -> JobView:
    svc = services(request)
    limits = svc.settings.limits
    if spec.image is not None:
        raise BadRequest("the image is chosen by the server; pin an earlier job's image with rerun")
    kind_for(spec.kind).validate(spec, svc)
    words = spec.words()
    if sum(len(a.encode()) + 1 for a in words) > limits.argv_bytes or any("\x00" in a for a in words):
        raise BadRequest(f"argv must be under {limits.argv_bytes} bytes with no NUL bytes")
    if spec.timeout_s > limits.max_timeout_s:
        raise BadRequest(f"timeout {spec.timeout_s:g} s is over this server's limit of {limits.max_timeout_s:g} s")
    validate_client_env(spec.client_env(), limits)
    svc.placement.check(spec.gpus)
    if svc.store.count(who, (JobState.created, JobState.queued)) >= limits.queued_per_token:
        raise TooManyJobs(f"you have {limits.queued_per_token} jobs waiting already; wait for some to finish")
    job = svc.store.create(who, spec)
    response.headers["Location"] = f"/v1/jobs/{job.id}"
    return _view(svc, job)


@router.put("/jobs/{job_id}/input")
async def upload_input(job_id: str, request: Request, who: str = Depends(owner)) -> JobView:
    svc = services(request)
    limits = svc.settings.limits
    job = _own_job(svc, job_id, who)
    if job.state != JobState.created:
        raise Conflict(f"job {job_id} already has its input (state {job.state})")
    declared = int(request.headers.get("content-length") or 0)
    if declared > limits.upload_bytes:
        raise PayloadTooLarge(f"the upload is {declared} bytes; the limit is {limits.upload_bytes}")
    paths = svc.store.paths(job_id)
    digest = hashlib.sha256()
    size = 0
    try:
        with open(paths.tar, "wb") as out:
            async for chunk in request.stream():
                size += len(chunk)
                if size > limits.upload_bytes:
                    raise PayloadTooLarge(f"the upload passed the limit of {limits.upload_bytes} bytes")
                digest.update(chunk)
                out.write(chunk)
        await run_in_threadpool(extract_upload, paths.tar, paths.input, limits)
    except RequestError:
        svc.store.delete(job_id)
        raise
    except BaseException:
        shutil.rmtree(paths.input, ignore_errors=True)
        raise
    svc.store.mark_queued(job_id, digest.hexdigest(), size)
    svc.scheduler.wake()
    return _view(svc, svc.store.get(job_id))


@router.post("/jobs/{job_id}/rerun", status_code=201)
def rerun_job(job_id: str, request: Request, who: str = Depends(owner)) -> JobView:
    """Run a finished job's submission again with the same image digest (and, for eval, task snapshot)."""
    svc = services(request)
    original = _own_job(svc, job_id, who)
    if original.state == JobState.created:
        raise Conflict(f"job {job_id} has no input yet")
    if svc.store.count(who, (JobState.created, JobState.queued)) >= svc.settings.limits.queued_per_token:
        raise TooManyJobs(f"you have {svc.settings.limits.queued_per_token} jobs waiting already")
    pinned = original.image.digest if original.image and original.image.digest else None
    job = svc.store.create(who, original.spec.model_copy(update={"image": pinned}))
    old, new = svc.store.paths(job_id), svc.store.paths(job.id)
    shutil.copyfile(old.tar, new.tar)
    if old.snapshot.is_dir():
        shutil.copytree(old.snapshot, new.snapshot, symlinks=True)
    extract_upload(new.tar, new.input, svc.settings.limits)
    svc.store.mark_queued(job.id, original.input_sha256, original.input_bytes)
    svc.scheduler.wake()
    return _view(svc, svc.store.get(job.id))


@router.get("/tasks")
def list_tasks(request: Request, who: str = Depends(owner)) -> list[dict[str, object]]:
    from kcoral.tasks.registry import DEFAULT_TASKS_DIR, all_tasks

    return [t.public() for t in all_tasks(services(request).settings.tasks_dir or DEFAULT_TASKS_DIR)]


@router.get("/jobs")
def list_jobs(request: Request, limit: int = 50, who: str = Depends(owner)) -> list[JobView]:
    svc = services(request)
    order = [j.id for j in svc.scheduler.queue_order()]  # once for the whole list, not once per job
    return [_view(svc, j, order) for j in svc.store.list(who, min(max(limit, 1), 500))]


@router.get("/jobs/{job_id}")
def get_job(job_id: str, request: Request, who: str = Depends(owner)) -> JobView:
    svc = services(request)
    return _view(svc, _own_job(svc, job_id, who))


@router.post("/jobs/{job_id}/cancel")
def cancel_job(job_id: str, request: Request, who: str = Depends(owner)) -> JobView:
    svc = services(request)
    _own_job(svc, job_id, who)
    return _view(svc, svc.scheduler.cancel(job_id))


@router.get("/jobs/{job_id}/log")
async def job_log(
    job_id: str, request: Request, offset: int = 0, follow: bool = False, who: str = Depends(owner)
) -> StreamingResponse:
    svc = services(request)
    _own_job(svc, job_id, who)
    if offset < 0:
        raise BadRequest("offset must be >= 0")
    path = svc.store.paths(job_id).log

    async def stream() -> AsyncIterator[bytes]:
        pos = offset
        while True:
            finished = svc.store.get(job_id).state == JobState.finished
            chunk = _read_at(path, pos)
            while chunk:
                pos += len(chunk)
                yield chunk
                chunk = _read_at(path, pos)
            if finished or not follow:
                return
            await asyncio.sleep(0.05)

    return StreamingResponse(stream(), media_type="application/octet-stream")


def _read_at(path: Path, pos: int) -> bytes:
    try:
        with open(path, "rb") as f:
            f.seek(pos)
            return f.read(_LOG_CHUNK)
    except FileNotFoundError:
        return b""


@router.get("/jobs/{job_id}/outputs")
def list_outputs(job_id: str, request: Request, who: str = Depends(owner)) -> list[OutputFile]:
    return list(_own_job(services(request), job_id, who).outputs)


@router.get("/jobs/{job_id}/outputs/{path:path}")
def get_output(job_id: str, path: str, request: Request, who: str = Depends(owner)) -> FileResponse:
    svc = services(request)
    job = _own_job(svc, job_id, who)
    if path not in {o.path for o in job.outputs}:
        raise NotFound(f"job {job_id} has no output file {path!r}")
    return FileResponse(safe_output_path(svc.store.paths(job_id).outputs, path), media_type="application/octet-stream")
