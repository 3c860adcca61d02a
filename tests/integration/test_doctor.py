"""``kcoral doctor`` against live servers: each check's line, the fix on what fails, exit status 1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kcoral.runner.jobcgroup import pressure_stalls
from kcoral.runner.wakeqos import NO_DRIVER_FIX, unheeded
from tests.serverproc import ROOT, free_port

#: no timing asserted, nothing done to the engine that another file would see (scripts/test.sh)
pytestmark = pytest.mark.concurrent


def doctor(*args: str, token: str = "") -> tuple[int, dict[str, Any], str]:
    env = {k: v for k, v in os.environ.items() if k not in ("KCORAL_REMOTE", "KCORAL_TOKEN")}
    if token:
        env["KCORAL_TOKEN"] = token
    run = [sys.executable, "-m", "kcoral", "doctor", *args]
    as_json = subprocess.run([*run, "--json"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    text = subprocess.run(run, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert as_json.returncode == text.returncode and "Traceback" not in as_json.stderr + text.stderr
    return as_json.returncode, json.loads(as_json.stdout), text.stdout


def by_name(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in doc["checks"]}


def test_a_healthy_server_passes_every_check(server_factory: Any) -> None:
    from kcoral.runner.limits import with_limits

    job_limits, connections = with_limits({"pids": "1000", "connection_total": "1500"})
    srv = server_factory(limits=job_limits, connections=connections)
    code, doc, text = doctor("--remote", srv.url)
    checks = by_name(doc)
    assert code == 0 and doc["ok"], doc
    # --json lists the limits the server runs with (set by `kcoral serve --limit NAME=VALUE`)
    assert doc["limits"]["pids"] == 1000 and doc["connection_limits"]["total"] == 1500, doc
    for name in ("client", "server", "token", "versions", "clock", "engine", "gpus", "image", "disk"):
        assert name in checks, name
    assert checks["engine"]["status"] == "ok" and checks["engine"]["detail"].startswith("Docker ")
    assert checks["image"]["status"] == "ok" and "sha256:" in checks["image"]["detail"]
    assert checks["clock"]["status"] == "ok" and checks["versions"]["status"] == "ok"
    assert "CPU slots" in checks["gpus"]["detail"]
    # this host (root, Docker's cgroupfs driver) gives evaluations a cgroup of the largest CPU weight
    cores = checks["leased cores"]
    assert cores["status"] == "ok" and cores["detail"].startswith("evaluations under cgroup /kcoral, "), cores
    # how the judge reads others' work on a candidate's core: exactly where the kernel keeps pressure stalls
    # (cgroup v2 with PSI), else from clock ticks, which doctor warns of (CI's cgroup v1)
    version = "2" if "cgroup v2)" in checks["engine"]["detail"] else "1"
    held = checks["others' work"]
    assert held["status"] == ("ok" if pressure_stalls(version) else "warn") and "candidate's core" in held["detail"]
    # this host (root, Linux) lets the server hold its cores awake while an evaluation runs (runner.wakeqos),
    # unless it has no cpuidle driver to heed it: then doctor warns and says how to fix it
    wake, why = checks["cpu wake-up"], unheeded()
    if why:
        assert wake["status"] == "warn" and wake["detail"].startswith(why) and wake["fix"] == NO_DRIVER_FIX, wake
    else:
        assert wake == {**wake, "status": "ok", "detail": "0 us while an evaluation runs"}
    assert all(line.split()[0] in ("ok", "warn", "fail") for line in text.splitlines() if not line.startswith(" "))


def test_what_fails_says_how_to_fix_it(server_factory: Any, tmp_path: Path) -> None:
    code, doc, text = doctor("--remote", f"http://127.0.0.1:{free_port()}")
    assert code == 1 and by_name(doc)["server"]["status"] == "fail" and "fix:" in text
    code, doc, _ = doctor()
    assert code == 1 and "KCORAL_REMOTE" in by_name(doc)["server"]["fix"]
    tokens = tmp_path / "tokens"
    tokens.write_text("alice " + "a" * 32 + "\n")
    srv = server_factory(tokens_file=tokens, image="kcoral-no-such-image:latest")
    code, doc, _ = doctor("--remote", srv.url)
    assert code == 1 and by_name(doc)["token"]["detail"] == "the server wants a token"
    code, doc, _ = doctor("--remote", srv.url, token="b" * 32)
    assert code == 1 and by_name(doc)["token"]["detail"] == "the server does not know this token"
    code, doc, text = doctor("--remote", srv.url, token="a" * 32)
    checks = by_name(doc)
    assert code == 1 and checks["token"]["status"] == "ok" and checks["image"]["status"] == "fail", doc
    assert "kcoral images build" in checks["image"]["fix"] and "kcoral-no-such-image" in text
