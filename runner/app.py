"""``create_app(settings)``: the FastAPI application, its error mapping and its life cycle."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from kcoral.runner.api import router
from kcoral.runner.errors import KcoralError
from kcoral.runner.printable import printable
from kcoral.runner.services import Services
from kcoral.runner.settings import Settings

log = logging.getLogger("kcoral.app")

#: the error code of a status Starlette answers by itself
HTTP_CODES = {400: "bad_request", 404: "not_found", 405: "method_not_allowed", 413: "too_large"}


def error_response(status: int, code: str, message: str, retry_after: int | None = None) -> JSONResponse:
    """THE error body: ``{"error": code, "message": text}``. The message may quote what a client or
    a job chose: it is made printable (runner.printable) so it is valid JSON and safe on a terminal."""
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else None
    return JSONResponse({"error": code, "message": printable(message)}, status_code=status, headers=headers)


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
        return error_response(exc.status, exc.code, exc.message, exc.retry_after)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        what = str(first.get("msg", "malformed")).removeprefix("Value error, ")
        message = f"invalid request: {where}: {what}" if where else f"invalid request: {what}"
        return error_response(400, "bad_request", message)

    @app.exception_handler(HTTPException)
    async def routing(_: Request, exc: HTTPException) -> JSONResponse:
        """Starlette's own answers (no such route, wrong method, a body it cannot parse), in our shape."""
        code = HTTP_CODES.get(exc.status_code, "bad_request" if exc.status_code < 500 else "internal")
        return error_response(exc.status_code, code, str(exc.detail))

    @app.exception_handler(Exception)
    async def unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error")
        return error_response(500, "internal", f"internal server error: {type(exc).__name__}")

    return app
