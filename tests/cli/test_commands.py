"""The kcoral commands end to end against tests.cli.fake_server (argument parsing, flow, exit codes)."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import httpx
import pytest

from cli import runflow
from cli.client import KcoralClient
from cli.main import run
from tests.cli.fake_server import FakeServer


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> FakeServer:
    fake = FakeServer()

    def make_client(base_url: str, token: str | None = None, timeout: float = 30.0) -> KcoralClient:
        return KcoralClient(base_url, token, timeout, transport=fake.transport())

    monkeypatch.setattr("cli.commands.common.KcoralClient", make_client)
    monkeypatch.setattr(runflow.time, "sleep", lambda _s: None)
    monkeypatch.setenv("KCORAL_REMOTE", "http://fake:8901")
    monkeypatch.delenv("KCORAL_TOKEN", raising=False)
    return fake


@pytest.fixture
def senddir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "send"
    d.mkdir()
    (d / "s.py").write_text("print('hi')\n")
    monkeypatch.chdir(tmp_path)
    return d


def test_python_streams_log_downloads_outputs_and_exits_ok(server, senddir, capfd) -> None:
    server.outputs = {"res/out.txt": b"42"}
    code = run(["python", "--send", str(senddir), "-e", "A=1", "--", "s.py", "--flag", "x", "-e", "B"])
    out, err = capfd.readouterr()
    assert code == 0
    assert out == server.log.decode()
    assert server.spec["argv"] == ["s.py", "--flag", "x", "-e", "B"] and server.spec["env"] == {"A": "1"}
    with tarfile.open(fileobj=io.BytesIO(server.uploaded)) as tar:
        assert tar.getnames() == ["s.py"]
    assert err.count("queued: position 2") == 1 and err.count("queued: position 1") == 1
    assert "job123: ok" in err and "sha256:abababababab" in err and "2.5s" in err
    assert (Path("kcoral-out/job123/res/out.txt")).read_bytes() == b"42"


def test_first_positional_ends_kcoral_options(server, senddir, capfd) -> None:
    assert run(["python", "--send", str(senddir), "s.py", "--timeout", "3", "--json"]) == 0
    assert server.spec["argv"] == ["s.py", "--timeout", "3", "--json"]
    assert capfd.readouterr().out == server.log.decode()  # --json went to the script, not to kcoral


def test_dash_c_and_dash_m(server, senddir) -> None:
    assert run(["python", "--send", str(senddir), "-c", "print(1)", "a"]) == 0
    assert server.spec["argv"] == ["-c", "print(1)", "a"]
    assert run(["python", "--send", str(senddir), "-m", "pkg.mod", "--n", "3"]) == 0
    assert server.spec["argv"] == ["-m", "pkg.mod", "--n", "3"]


def test_json_is_one_document_and_exit_code_is_the_jobs(server, senddir, capfd, tmp_path) -> None:
    server.verdict, server.exit_code = "exit", 3
    server.outputs = {"o.bin": b"\x00\x01"}
    code = run(["python", "--send", str(senddir), "--json", "-o", str(tmp_path / "o"), "s.py"])
    out, _ = capfd.readouterr()
    doc = json.loads(out)
    assert code == 3
    assert doc["id"] == "job123" and doc["verdict"] == "exit" and doc["exit_code"] == 3
    assert doc["log"] == server.log.decode() and doc["log_truncated"] is False
    assert doc["output_dir"] == str(tmp_path / "o") and (tmp_path / "o" / "o.bin").read_bytes() == b"\x00\x01"


@pytest.mark.parametrize(
    ("verdict", "expected"), [("timeout", 124), ("memory_limit", 137), ("output_limit", 123)]
)
def test_verdict_exit_codes(server, senddir, verdict: str, expected: int) -> None:
    server.verdict = verdict
    assert run(["python", "--send", str(senddir), "s.py"]) == expected


def test_detach_prints_the_job_id(server, senddir, capfd) -> None:
    assert run(["python", "--send", str(senddir), "--detach", "s.py"]) == 0
    assert capfd.readouterr().out == "job123\n"
    assert ("GET", "/v1/jobs/job123/log") not in server.requests


def test_ctrl_c_cancels_and_exits_130(server, senddir, capfd) -> None:
    server.interrupt_on_log = True
    assert run(["python", "--send", str(senddir), "s.py"]) == 130
    assert ("POST", "/v1/jobs/job123/cancel") in server.requests
    assert "cancelling job job123" in capfd.readouterr().err


def test_missing_remote_is_a_usage_error(server, senddir, monkeypatch, capfd) -> None:
    monkeypatch.delenv("KCORAL_REMOTE")
    assert run(["python", "--send", str(senddir), "s.py"]) == 2
    assert "KCORAL_REMOTE" in capfd.readouterr().err


def test_refused_env_is_a_usage_error_before_any_request(server, senddir, capfd) -> None:
    assert run(["python", "--send", str(senddir), "-e", "LD_PRELOAD=x", "s.py"]) == 2
    assert "LD_PRELOAD" in capfd.readouterr().err and server.requests == []


def test_unauthorized_is_77(server, senddir, capfd) -> None:
    server.token = "right"
    assert run(["python", "--send", str(senddir), "--token", "wrong", "s.py"]) == 77
    err = capfd.readouterr().err
    assert "unknown token" in err and "Traceback" not in err


def test_unreachable_is_69(monkeypatch, senddir, capfd) -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    monkeypatch.setattr(
        "cli.commands.common.KcoralClient",
        lambda url, token=None, timeout=30.0: KcoralClient(
            url, token, timeout, transport=httpx.MockTransport(refuse)
        ),
    )
    assert run(["jobs", "--remote", "http://nowhere:1"]) == 69
    assert "cannot reach" in capfd.readouterr().err


def test_status_jobs_gpus_cancel_json(server, capfd) -> None:
    server.state = "finished"
    assert run(["status", "job123", "--json"]) == 0
    assert json.loads(capfd.readouterr().out)["state"] == "finished"
    assert run(["jobs", "--json"]) == 0
    assert [j["id"] for j in json.loads(capfd.readouterr().out)] == ["job123"]
    assert run(["gpus", "--json"]) == 0
    assert json.loads(capfd.readouterr().out)["gpus"][0]["name"] == "H200"
    assert run(["cancel", "job123"]) == 0
    assert "job123" in capfd.readouterr().out


def test_human_views_render(server, capfd) -> None:
    server.state = "finished"
    for argv in (["status", "job123"], ["jobs"], ["gpus"]):
        assert run(argv) == 0
    out = capfd.readouterr().out
    assert "job123" in out and "H200" in out


def test_logs_writes_raw_bytes(server, capfd) -> None:
    assert run(["logs", "job123", "--offset", "6"]) == 0
    assert capfd.readouterr().out == server.log[6:].decode()


def test_unknown_job_is_2(server, capfd) -> None:
    assert run(["status", "nope"]) == 2
    assert "no route" in capfd.readouterr().err


def test_bad_usage_is_2(server, capfd) -> None:
    assert run(["python", "--gpus", "-1", "s.py"]) == 2
    assert run(["python", "--send", "/nonexistent-dir", "s.py"]) == 2
    assert run(["python"]) == 2
    assert run(["nosuchcommand"]) == 2
