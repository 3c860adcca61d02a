"""A browser pointed at the server's address lands on its web page (no Docker: nothing runs)."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from kcoral.runner.app import create_app
from kcoral.runner.settings import Settings
from tests.runner.fake_executor import fake_services


def test_the_root_redirects_to_the_web_page(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, gpus="none")
    client = TestClient(create_app(settings, fake_services(settings)))
    answer = client.get("/", follow_redirects=False)
    assert answer.status_code == 307 and answer.headers["location"] == "/ui"
    assert "/" not in client.get("/openapi.json").json()["paths"]
