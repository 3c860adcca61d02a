"""``create_app(settings)``: the FastAPI application, its error mapping and its life cycle."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from kcoral.runner.api import router
from kcoral.runner.errors import KcoralError
from kcoral.runner.services import Services
from kcoral.runner.settings import Settings

log = logging.getLogger("kcoral.app")


def create_app(settings: Settings, services: Services | None = None) -> FastAPI:
    svc = services or Services.build(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        svc.scheduler.start()
        yield
        svc.scheduler.stop()

    app = FastAPI(
        title="kcoral",
        version="0.1.0",
        lifespan=lifespan,
        description="Remote GPU benchmark server: jobs in locked-down containers on leased GPUs.",
    )
    app.state.services = svc
    app.include_router(router)

    @app.exception_handler(KcoralError)
    async def kcoral_error(_: Request, exc: KcoralError) -> JSONResponse:
        return JSONResponse({"error": exc.code, "message": exc.message}, status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        what = first.get("msg", "malformed")
        message = f"invalid request: {where}: {what}" if where else f"invalid request: {what}"
        return JSONResponse({"error": "bad_request", "message": message}, status_code=400)

    @app.exception_handler(Exception)
    async def unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error")
        return JSONResponse(
            {"error": "internal", "message": f"internal server error: {type(exc).__name__}"}, status_code=500
        )

    return app
