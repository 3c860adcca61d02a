"""``GET /metrics`` (runner.metrics), parsed with prometheus-client's own parser after real jobs."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

#: no timing asserted, nothing done to the engine that another file would see (scripts/test.sh)
pytestmark = pytest.mark.concurrent


def scrape(http: Any, **headers: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """Metric sample name -> (labels) -> value."""
    r = http.get("/metrics", headers=headers)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    samples: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(r.text):
        for s in family.samples:
            samples.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return samples


def test_metrics_count_the_jobs_the_queue_the_bytes_and_the_slots(server_factory: Any) -> None:
    srv = server_factory(cpu_slots=1)
    ok, _ = srv.run({"m.py": "open('/job/out/r.txt', 'w').write('x' * 1000)\nprint('hello')"}, ["m.py"])
    bad, _ = srv.run({"m.py": "raise SystemExit(3)"}, ["m.py"])
    assert ok["verdict"] == "ok" and bad["verdict"] == "exit"
    blocker = srv.submit({"m.py": "import time\ntime.sleep(60)"}, ["m.py"])
    deadline = time.monotonic() + 30
    while srv.http.get(f"/v1/jobs/{blocker['id']}").json()["state"] != "running":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    srv.submit({"m.py": "pass"}, ["m.py"])  # waits behind the blocker

    m = scrape(srv.http)
    jobs = m["kcoral_jobs"]
    assert jobs[(("kind", "python"), ("state", "finished"), ("verdict", "ok"))] == 1
    assert jobs[(("kind", "python"), ("state", "finished"), ("verdict", "exit"))] == 1
    assert jobs[(("kind", "python"), ("state", "running"), ("verdict", ""))] == 1
    assert m["kcoral_queue_depth"] == {(("owner", "local"),): 1}
    for name in ("kcoral_queue_wait_seconds", "kcoral_run_seconds"):
        assert m[f"{name}_count"][()] == 2 and m[f"{name}_sum"][()] > 0
        assert m[f"{name}_bucket"][(("le", "+Inf"),)] == 2
    assert m["kcoral_run_seconds_bucket"][(("le", "3600.0"),)] == 2
    assert m["kcoral_upload_bytes_total"][()] > 0
    assert m["kcoral_output_bytes_total"][()] >= 1000
    assert m["kcoral_log_bytes_total"][()] >= len("hello\n")
    assert m["kcoral_slot_busy"] == {(("slot", "cpu0"),): 1.0}
    assert m["kcoral_slot_drained"] == {(("slot", "cpu0"),): 0.0}
    srv.http.post(f"/v1/jobs/{blocker['id']}/cancel")


def test_metrics_want_a_token_unless_made_public(server_factory: Any, tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("alice " + "a" * 32 + "\n")
    guarded = server_factory(tokens_file=tokens)
    assert guarded.http.get("/metrics").status_code == 401
    assert guarded.http.get("/metrics", headers={"Authorization": "Bearer " + "b" * 32}).status_code == 401
    scrape(guarded.http, Authorization="Bearer " + "a" * 32)
    public = server_factory(tokens_file=tokens, metrics_public=True)
    assert "kcoral_jobs" in public.http.get("/metrics").text
