"""The OpenAPI schema documents what the server sends: our error body with the statuses each route
can answer, and never FastAPI's 422 (a validation failure is our 400). The app is built with a fake
executor and no GPUs (tests.runner.fake_executor.fake_services): no Docker engine, no NVML."""

from __future__ import annotations

import json
from pathlib import Path

from kcoral.runner.app import create_app
from kcoral.runner.settings import Settings
from tests.runner.fake_executor import fake_services


def schema(tmp_path: Path) -> dict:
    settings = Settings(data_dir=tmp_path, gpus="none")
    return create_app(settings, fake_services(settings)).openapi()


def test_no_422_and_every_error_is_our_body(tmp_path: Path) -> None:
    doc = schema(tmp_path)
    assert "422" not in json.dumps(doc["paths"]) and "HTTPValidationError" not in json.dumps(doc)
    for path, operations in doc["paths"].items():
        for method, op in operations.items():
            errors = {code: r for code, r in op["responses"].items() if code >= "400"}
            assert {"400", "401"} <= set(errors), (method, path)
            for r in errors.values():
                assert r["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ErrorBody"}
    assert doc["components"]["schemas"]["ErrorBody"]["required"] == ["error", "message"]


def test_each_route_lists_the_statuses_it_can_send(tmp_path: Path) -> None:
    paths = schema(tmp_path)["paths"]

    def codes(path: str, method: str) -> set[str]:
        return {c for c in paths[path][method]["responses"] if c >= "400"}

    assert codes("/v1/jobs", "post") == {"400", "401", "429", "503", "507"}
    assert codes("/v1/jobs/{job_id}/input", "put") == {"400", "401", "404", "409", "413", "503", "507"}
    assert codes("/v1/jobs/{job_id}/rerun", "post") == {"400", "401", "404", "409", "429", "503", "507"}
    assert codes("/v1/jobs/{job_id}", "get") == {"400", "401", "404"}


def test_the_byte_routes_document_bytes(tmp_path: Path) -> None:
    paths = schema(tmp_path)["paths"]
    for path in ("/v1/jobs/{job_id}/log", "/v1/jobs/{job_id}/outputs/{path}"):
        assert set(paths[path]["get"]["responses"]["200"]["content"]) == {"application/octet-stream"}
