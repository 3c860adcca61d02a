"""``create_app(settings)``: the FastAPI application, its error mapping and its life cycle."""

from __future__ import annotations

import logging
import math
import os
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import FrameType
from typing import Any

import uvicorn
from fastapi import Depends, FastAPI, Header, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import RedirectResponse
from starlette.exceptions import HTTPException

from kcoral import __version__
from kcoral.protocol.errors import KcoralError, error_body
from kcoral.runner.api import owner, router
from kcoral.runner.bodylimit import BodyLimit
from kcoral.runner.connections import guarded_protocol
from kcoral.runner.evaluations import backfill
from kcoral.runner.evaluations_api import router as evaluations_router
from kcoral.runner.keys_api import router as keys_router
from kcoral.runner.recalibration import Recalibrator
from kcoral.runner.services import Services
from kcoral.runner.settings import Settings
from kcoral.runner.warmup import submit_warm_ups

log = logging.getLogger("kcoral.app")

#: the error code of a status Starlette answers by itself
HTTP_CODES = {400: "bad_request", 404: "not_found", 405: "method_not_allowed", 413: "too_large"}


def error_response(status: int, code: str, message: str, retry_after: float | None = None) -> Response:
    """An answer with THE error body (kcoral.protocol.errors.error_body)."""
    headers = {"Retry-After": str(math.ceil(retry_after))} if retry_after is not None else None
    return Response(error_body(code, message), status_code=status, media_type="application/json", headers=headers)


def create_app(settings: Settings, services: Services | None = None) -> FastAPI:
    svc = services or Services.build(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if not os.path.ismount(settings.data_dir):
            log.warning(
                "the data dir %s is not a filesystem of its own: a job's /proc/self/mountinfo shows the host "
                "path of the folders it mounts from there; mount one there to show no more than /jobs/ID/...",
                settings.data_dir.resolve(),
            )
        svc.bytecode.start()
        # evaluations finished before the store kept their digests and scores get them, off the start's path
        threading.Thread(target=backfill, args=(svc.store,), name="kcoral-backfill", daemon=True).start()
        svc.scheduler.start()
        from kcoral.tasks.registry import all_tasks

        svc.pack_probe.start(all_tasks(settings.tasks_dirs))  # packs' problems, in the job image
        svc.warm_ups = submit_warm_ups(svc, settings.warm_up, settings.calibrate)
        recalibrator = Recalibrator(svc)  # calibrated tasks measured again while idle, so floors span time
        recalibrator.start()
        yield
        recalibrator.stop()
        svc.scheduler.stop(settings.shutdown_grace_s)
        svc.store.close()

    open_docs = svc.auth.tokens is None  # with tokens, the schema is for token holders and /docs is off
    app = FastAPI(
        title="kcoral",
        version=__version__,
        lifespan=lifespan,
        description="Remote GPU benchmark server: jobs in locked-down containers on leased GPUs.",
        docs_url="/docs" if open_docs else None,
        redoc_url=None,
        openapi_url="/openapi.json" if open_docs else None,
    )
    app.state.services = svc
    app.add_middleware(BodyLimit)  # every body bounded before a route reads it (runner.bodylimit)
    app.include_router(router)
    app.include_router(evaluations_router)
    app.include_router(keys_router)
    from kcoral.runner import web

    app.include_router(web.router)
    app.mount("/ui/static", web.static, name="ui-static")

    _own_routes(app, svc, open_docs)
    _error_handlers(app)
    return app


def _own_routes(app: FastAPI, svc: Services, open_docs: bool) -> None:
    """The routes outside the API's routers: ``/`` (to the web page), ``/openapi.json`` (a token
    holder's where the server has tokens) and ``/metrics`` (Prometheus's: a token's unless public)."""

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        """A browser pointed at the server lands on its web page."""
        return RedirectResponse("/ui", status_code=307)

    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    if not open_docs:

        @app.get("/openapi.json", include_in_schema=False)
        def schema(_: str = Depends(owner)) -> dict[str, Any]:
            return app.openapi()

    @app.get("/metrics", include_in_schema=False)
    def metrics(authorization: str | None = Header(default=None)) -> Response:
        """Prometheus's scrape (runner.metrics): a token's unless the operator made it public."""
        if not svc.settings.metrics_public:
            svc.auth.owner(authorization)
        from kcoral.runner.metrics import CONTENT_TYPE, render

        return Response(render(svc), media_type=CONTENT_TYPE)


def _error_handlers(app: FastAPI) -> None:
    """Every error answered in the API's one shape (:func:`error_response`): ours, a malformed request,
    Starlette's own (no such route, wrong method), and anything unexpected as a 500 that names only its
    type."""

    @app.exception_handler(KcoralError)
    async def kcoral_error(_: Request, exc: KcoralError) -> Response:
        return error_response(exc.status, exc.code, exc.message, exc.retry_after)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> Response:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        what = str(first.get("msg", "malformed")).removeprefix("Value error, ")
        message = f"invalid request: {where}: {what}" if where else f"invalid request: {what}"
        return error_response(400, "bad_request", message)

    @app.exception_handler(HTTPException)
    async def routing(_: Request, exc: HTTPException) -> Response:
        """Starlette's own answers (no such route, wrong method, a body it cannot parse), in our shape."""
        code = HTTP_CODES.get(exc.status_code, "bad_request" if exc.status_code < 500 else "internal")
        answer = error_response(exc.status_code, code, str(exc.detail))
        answer.headers.update(exc.headers or {})  # a 405's Allow
        return answer

    @app.exception_handler(Exception)
    async def unexpected(_: Request, exc: Exception) -> Response:
        log.exception("unexpected error")
        return error_response(500, "internal", f"internal server error: {type(exc).__name__}")


def _openapi(app: FastAPI) -> dict[str, Any]:
    """FastAPI's schema less what this server never sends: a validation failure is our 400 (with
    ErrorBody, as each route documents), never FastAPI's 422."""
    if app.openapi_schema is None:
        schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
        for path in schema.get("paths", {}).values():
            for operation in path.values():
                operation.get("responses", {}).pop("422", None)
        components = schema.get("components", {}).get("schemas", {})
        for name in ("HTTPValidationError", "ValidationError"):
            components.pop(name, None)
        app.openapi_schema = schema
    return app.openapi_schema


class _Server(uvicorn.Server):
    """uvicorn, drained at the first SIGTERM or SIGINT: the scheduler stops taking work and starts the
    running jobs' grace period while the server goes on listening, so a new submission is answered
    503 ``shutting_down`` with Retry-After (the CLI exits 75: try again) and the status, logs and
    outputs of existing jobs keep being served; once the running jobs are done (or interrupted at the
    grace's end) uvicorn shuts down as usual, draining its connections. A second signal stops at once."""

    def __init__(self, config: uvicorn.Config, services: Services) -> None:
        super().__init__(config)
        self.services = services
        self._draining: threading.Thread | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self._draining is None:
            grace = self.services.settings.shutdown_grace_s
            log.warning("stopping: no new work; running jobs get %g s, then are interrupted", grace)
            self._draining = threading.Thread(target=self._drain, args=(grace,), daemon=True)
            self._draining.start()
            return
        super().handle_exit(sig, frame)

    def _drain(self, grace: float) -> None:
        try:
            self.services.scheduler.stop(grace)
        finally:
            self.should_exit = True


def run_server(app: FastAPI, host: str, port: int, log_level: str, log_format: str = "text") -> None:
    """Run ``app`` until SIGTERM or SIGINT, then shut down as :class:`_Server` says. With the JSON log
    format uvicorn's own lines go through the same handler (runner.logsetup)."""
    svc: Services = app.state.services
    grace = svc.settings.shutdown_grace_s
    own = {"log_config": None} if log_format == "json" else {}
    config = server_config(
        app,
        host,
        port,
        log_level=log_level,
        access_log=False,
        timeout_graceful_shutdown=int(grace) + 60,
        **own,
    )
    _Server(config, svc).run()


def server_config(app: FastAPI, host: str, port: int, **options: Any) -> uvicorn.Config:
    """uvicorn's configuration for ``app``: its HTTP/1.1 protocol under the server's connection limits
    (runner.connections), idle keep-alive connections closed after 5 s."""
    svc: Services = app.state.services
    return uvicorn.Config(
        app, host=host, port=port, http=guarded_protocol(svc.settings.connections), timeout_keep_alive=5, **options
    )
