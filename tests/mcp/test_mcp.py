"""``kcoral mcp`` driven by the MCP SDK's own client over stdio, against a real kcoral server (CPU):
the tools' list, tasks, an evaluation of a good and of a wrong candidate, a job, its log in pages, its
outputs, the resources, and errors as tool errors. Every call and result goes to a transcript
($KCORAL_MCP_TRANSCRIPT, default tests/mcp/artifacts/transcript.json, git-ignored)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError
from mcp.client.stdio import StdioServerParameters

from tests.attacks.judging import CANDIDATES
from tests.conftest import quick_tasks
from tests.scored import QUIET_TRIES, host_unscored_failure
from tests.serverproc import ROOT

PACKS = ROOT / "tests" / "fixtures" / "packs"
TRANSCRIPT = Path(os.environ.get("KCORAL_MCP_TRANSCRIPT") or Path(__file__).parent / "artifacts" / "transcript.json")
TOOLS = {"list_tasks", "show_task", "evaluate", "check", "run_python", "job_status", "job_log", "download_outputs",
         "ncu", "iket", "sanitizer", "timeline", "proton", "cancel", "history", "compare", "best"}  # fmt: skip


def test_an_agent_evaluates_runs_and_reads_through_mcp(server_factory: Any, tmp_path: Path) -> None:
    # demo/softmax timed briefly (tests.conftest.quick_tasks): the tools' answers are checked, not the score's size
    srv = server_factory(tasks_dirs=(quick_tasks(tmp_path / "tasks"), PACKS))
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "kcoral", "mcp", "--remote", srv.url],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=str(tmp_path),
    )
    transcript: list[dict[str, Any]] = []
    progress: list[str] = []

    async def session() -> None:
        async with Client(params) as client:

            async def tool(name: str, **arguments: Any) -> Any:
                async def noted(done: float, total: float | None, message: str | None) -> None:
                    progress.append(message or "")

                result = await client.call_tool(name, arguments, progress_callback=noted)
                text = "".join(getattr(c, "text", "") for c in result.content)
                transcript.append({"tool": name, "arguments": arguments, "is_error": result.is_error,
                                   "result": result.structured_content if not result.is_error else text})  # fmt: skip
                if result.is_error:
                    return text
                content = result.structured_content
                return content.get("result", content) if isinstance(content, dict) and len(content) == 1 else content

            listed = (await client.list_tools()).tools
            assert {t.name for t in listed} >= TOOLS
            undescribed = [(t.name, name) for t in listed for name, prop in t.input_schema["properties"].items()
                           if not prop.get("description")]  # fmt: skip
            assert undescribed == [], undescribed  # every parameter says what it is (and where a path is)
            tasks = await tool("list_tasks")
            assert "demo/softmax" in {t["id"] for t in tasks}
            contract = await tool("show_task", task="demo/softmax")
            assert contract["id"] == "demo/softmax" and contract["workloads"]

            good = (CANDIDATES / "honest" / "solution.py").read_text()
            for _ in range(QUIET_TRIES):  # asked again while the host leaves it unscored (tests.scored)
                passed = await tool("evaluate", task="demo/softmax", files={"solution.py": good}, output_dir="good")
                if not host_unscored_failure(passed["failure"]):
                    break
            assert passed["ok"] and passed["verdict"] == "ok" and passed["exit_code"] == 0, passed
            assert passed["summary"]["speedup"] > 0 and passed["passed"] == passed["total"]
            assert any("speedup" in line for line in passed["lines"])
            # the report once: in lines, not again in the log's tail (which holds what the submission printed)
            assert not any(line in passed["log_tail"] for line in passed["lines"] if line.strip()), passed
            assert any(m.startswith(f"job {passed['job_id']}: ") for m in progress)  # progress was told

            wrong = good.replace("return", "return 2 *", 1) if "return" in good else "def setup(*a):\n    return None\n"
            failed = await tool(
                "check", task="demo/softmax", files={"solution.py": wrong}, output_dir="wrong", label="wrong-check"
            )
            assert not failed["ok"] and failed["failure"] and failed["exit_code"] == 1, failed
            rejected = await tool("evaluate", task="demo/softmax", files={"solution.py": wrong}, output_dir="wrong2")
            assert not rejected["ok"] and rejected["exit_code"] == 1 and rejected["failure"], rejected
            assert rejected.get("summary") is None  # no score for a wrong candidate

            # the loop: the candidates by name, the two compared, the best so far
            typed = {t.name: (t.output_schema or {}).get("properties") for t in listed if t.name != "list_tasks"}
            assert all(typed.values()), typed  # each result's own fields, not {"type": "object"}
            hist = await tool("history", task="demo/softmax", limit=5)
            named = {e["id"]: e["label"] for e in hist["evaluations"]}
            assert named[passed["job_id"]].startswith("submission-"), named  # files: 'submission' and the digest
            assert named[rejected["job_id"]] != named[passed["job_id"]] and named[failed["job_id"]] == "wrong-check"
            assert hist["best"]["id"] == passed["job_id"], hist["best"]
            pair = await tool("compare", a=passed["job_id"], b=rejected["job_id"])
            assert not pair["identical"] and "solution.py" in pair["diff"]["changed"], pair
            board = await tool("best", task="demo/softmax")
            assert [e["evaluation"]["id"] for e in board["entries"]] == [passed["job_id"]], board
            too_many = await tool("history", task="demo/softmax", limit=0)
            assert "limit must be" in too_many, too_many

            # a plain job that also writes a passing report of its own: a file like any other, never a score
            forged = json.dumps({"task": "demo/softmax", "holdout": "PASS", "holdout_probes": 4, "workloads": [],
                                 "flags": [], "passed": 7, "total": 7, "lines": ["speedup: 7.9000x"]})  # fmt: skip
            script = (
                "import os\nfor i in range(3000):\n    print('line', i)\n"
                "open(os.environ['KCORAL_OUTPUT_DIR'] + '/r.txt', 'w').write('hi')\n"
                f"open(os.environ['KCORAL_OUTPUT_DIR'] + '/report.json', 'w').write({forged!r})\n"
            )
            ran = await tool("run_python", argv=["m.py"], files={"m.py": script}, output_dir="run")
            assert ran["exit_code"] == 0 and ran["log_bytes_cut"] > 0 and "job_log" in ran["log_hint"], ran
            assert ran["log_tail"].endswith("line 2999\n") and any(p.endswith("r.txt") for p in ran["outputs"])
            page = await tool("job_log", job_id=ran["job_id"], offset=0, limit=100)
            assert page["text"].startswith("line 0\n") and page["more"] and page["next_offset"] == 100
            status = await tool("job_status", job_id=ran["job_id"])
            assert status["verdict"] == "ok" and status["id"] == ran["job_id"]
            got = await tool("download_outputs", job_id=ran["job_id"], output_dir=str(tmp_path / "again"))
            assert sorted(Path(p).name for p in got["files"]) == ["r.txt", "report.json"]
            ended = await tool("cancel", job_id=ran["job_id"])  # it had ended: cancelling changes nothing
            assert ended["verdict"] == "ok" and ended["state"] == "finished"

            read = await client.read_resource(f"kcoral://jobs/{passed['job_id']}/report")
            assert json.loads(read.contents[0].text)["task"] == "demo/softmax"  # type: ignore[union-attr]
            with pytest.raises(MCPError, match="has no report"):
                await client.read_resource(f"kcoral://jobs/{ran['job_id']}/report")
            read = await client.read_resource("kcoral://tasks/demo/softmax")
            assert json.loads(read.contents[0].text)["id"] == "demo/softmax"  # type: ignore[union-attr]
            read = await client.read_resource("kcoral://tasks/kernelbench/level1/1_Scale")  # a pack's: three parts
            assert json.loads(read.contents[0].text)["id"] == "kernelbench/level1/1_Scale"  # type: ignore[union-attr]
            with pytest.raises(MCPError, match="no task"):
                await client.read_resource("kcoral://tasks/demo/nothing")

            missing = await tool("job_status", job_id="20990101-000000-deadbeef")
            assert "no job" in missing.lower() and "Traceback" not in missing, missing
            both = await tool("evaluate", task="demo/softmax", directory=".", files={"solution.py": good})
            assert "not both" in both
            neither = await tool("evaluate", task="demo/softmax")  # a tool error saying what to pass
            assert "give the submission: directory" in neither and "Traceback" not in neither, neither

    anyio.run(session)
    TRANSCRIPT.parent.mkdir(parents=True, exist_ok=True)
    TRANSCRIPT.write_text(json.dumps({"calls": transcript, "progress": progress}, indent=1, default=str) + "\n")


def test_the_http_transport_stays_on_loopback() -> None:
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "kcoral", "mcp", "--remote", "http://127.0.0.1:9", "--http", "0.0.0.0:8931"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode != 0 and "loopback" in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_the_http_transport_answers_only_with_this_starts_secret(tmp_path: Path) -> None:
    """``kcoral mcp --http``: a new secret each start, in a file only its user reads and printed once;
    a request without it (or with another) is refused 401, the SDK's client with it lists the tools."""
    import stat
    import subprocess
    import time

    import httpx
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    from tests.serverproc import free_port

    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    state = tmp_path / "state"
    secret_file = state / "kcoral" / f"mcp-http-127.0.0.1-{port}.secret"
    proc = subprocess.Popen(
        [sys.executable, "-m", "kcoral", "mcp", "--remote", "http://127.0.0.1:9", "--http", f"127.0.0.1:{port}"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), "XDG_STATE_HOME": str(state)},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None and time.monotonic() < deadline, "kcoral mcp --http did not start"
            try:
                refused = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, timeout=5)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        assert refused.status_code == 401 and "Authorization: Bearer SECRET" in refused.json()["message"]
        secret = secret_file.read_text().strip()
        assert (
            stat.S_IMODE(secret_file.stat().st_mode) == 0o600
            and stat.S_IMODE(secret_file.parent.stat().st_mode) == 0o700
        )
        for wrong in ("Bearer " + secret[:-1], "Bearer", f"Basic {secret}", f"Bearer {secret}x"):
            r = httpx.post(
                url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers={"Authorization": wrong}
            )
            assert r.status_code == 401, (wrong, r.status_code)

        async def tools() -> set[str]:
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {secret}"})
            async with http, Client(streamable_http_client(url, http_client=http)) as client:
                return {t.name for t in (await client.list_tools()).tools}

        assert anyio.run(tools) >= TOOLS
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert err.count(secret) == 1 and "Authorization: Bearer" in err, err  # printed once
    assert not secret_file.exists()  # gone with the server that used it


def test_the_stdio_transport_answers_every_unparsable_line_with_a_parse_error() -> None:
    """Not JSON, a lone surrogate, not a JSON-RPC message: each gets JSON-RPC's parse error (id null), and
    the session goes on (the SDK's transport alone drops such a line, and the client waits for ever)."""
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
    surrogate = '{"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"x": "\\ud800"}}'
    lines = [
        json.dumps(initialize),
        "not json",
        surrogate,
        '{"hello": 1}',
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "ping"}),
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "kcoral", "mcp", "--remote", "http://127.0.0.1:9"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    deadline = threading.Timer(60, proc.kill)  # a line never answered ends the wait (EOF), not the test run
    deadline.start()
    try:
        proc.stdin.write("".join(line + "\n" for line in lines).encode())
        proc.stdin.flush()
        answers = [json.loads(proc.stdout.readline()) for _ in range(5)]  # the server stays open: no EOF race
    finally:
        deadline.cancel()
        proc.kill()
        proc.communicate()  # waits, and closes the pipes
    assert answers[0]["id"] == 1 and "result" in answers[0]
    errors = answers[1:4]
    assert all(a["id"] is None and a["error"]["code"] == -32700 for a in errors), errors
    assert answers[4] == {"jsonrpc": "2.0", "id": 3, "result": {}}


def test_the_server_logs_nothing_per_request_by_default(server_factory: Any) -> None:
    """At the default level the MCP server's stderr (the agent's) stays quiet while it serves requests
    and calls the kcoral server: no line per request (the SDK's "Processing request ...", httpx's "HTTP
    Request: ..." were both there at INFO); KCORAL_MCP_LOG_LEVEL=INFO brings them back."""
    srv = server_factory()
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "job_status", "arguments": {"job_id": "20990101-000000-deadbeef"}}}  # fmt: skip
    lines = [initialize, {"jsonrpc": "2.0", "method": "notifications/initialized"}, call]

    def stderr_of(level: str | None) -> tuple[str, dict[str, Any]]:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        env.pop("KCORAL_MCP_LOG_LEVEL", None)
        if level:
            env["KCORAL_MCP_LOG_LEVEL"] = level
        proc = subprocess.Popen(
            [sys.executable, "-m", "kcoral", "mcp", "--remote", srv.url],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        )  # fmt: skip
        assert proc.stdin is not None and proc.stdout is not None
        deadline = threading.Timer(60, proc.kill)
        deadline.start()
        try:
            proc.stdin.write("".join(json.dumps(line) + "\n" for line in lines).encode())
            proc.stdin.flush()
            answers = [json.loads(proc.stdout.readline()) for _ in range(2)]
        finally:
            deadline.cancel()
            proc.kill()
            _, err = proc.communicate()
        return err.decode(errors="replace"), answers[1]

    quiet, answer = stderr_of(None)
    assert answer["id"] == 2 and answer["result"]["isError"], answer  # it did call the kcoral server
    assert "no job" in json.dumps(answer).lower(), answer
    assert quiet.strip() == "", quiet
    loud, _ = stderr_of("INFO")
    assert "HTTP Request" in loud or "Processing request" in loud, loud
