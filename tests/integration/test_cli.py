"""The kcoral commands end to end against a real server (uvicorn on loopback, SQLite, Docker jobs).

Commands run in-process through ``cli.main.run`` with ``KCORAL_REMOTE`` pointing at the test server;
what they print is read with capfd. Ctrl-C is sent for real, to a ``python -m kcoral`` subprocess.
"""

from __future__ import annotations

import ast
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from kcoral.cli.main import run
from kcoral.cli.render import summary_line
from kcoral.protocol.framing import STDERR, STDOUT, FrameReader
from kcoral.protocol.models import JobView
from kcoral.protocol.typeddata import from_data
from kcoral.runner.limits import KiB, Limits, MiB
from tests.conftest import RunningServer, free_port

#: no timing asserted, nothing done to the engine that another file would see (scripts/test.sh)
pytestmark = pytest.mark.concurrent

REPO = Path(__file__).resolve().parents[2]

# Prints what the job sees: its argv, chosen env vars, the sent files; writes two output files.
SCRIPT = """\
import os, sys
print("argv", sys.argv)
print("env", os.environ.get("A"), os.environ.get("C"), os.environ.get("B"))
files = sorted(os.path.relpath(os.path.join(d, f)) for d, _, fs in os.walk(".") for f in fs)
print("files", files)
print("data", open("data/in.txt").read())
sys.stderr.write("to stderr\\n")
out = os.environ["KCORAL_OUTPUT_DIR"]
os.makedirs(os.path.join(out, "res"))
open(os.path.join(out, "res", "out.txt"), "w").write("42")
open(os.path.join(out, "o.bin"), "wb").write(bytes(range(256)))
"""


@pytest.fixture
def remote(server: RunningServer, monkeypatch: pytest.MonkeyPatch) -> RunningServer:
    """The default server, as the CLI's $KCORAL_REMOTE."""
    monkeypatch.setenv("KCORAL_REMOTE", server.url)
    monkeypatch.delenv("KCORAL_TOKEN", raising=False)
    return server


@pytest.fixture
def use(monkeypatch: pytest.MonkeyPatch):
    """Point the CLI at another server (one made with server_factory)."""

    def point(srv: RunningServer) -> RunningServer:
        monkeypatch.setenv("KCORAL_REMOTE", srv.url)
        monkeypatch.delenv("KCORAL_TOKEN", raising=False)
        return srv

    return point


@pytest.fixture
def senddir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "send"
    (d / "data").mkdir(parents=True)
    (d / "s.py").write_text(SCRIPT)
    (d / "data" / "in.txt").write_text("payload")
    (d / "argv.py").write_text("import sys\nprint(sys.argv)\n")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return d


def _jobs(srv: RunningServer, **headers: str) -> list[dict[str, Any]]:
    r = srv.http.get("/v1/jobs", headers=headers)
    assert r.status_code == 200, r.text
    return r.json()


def _only_job(srv: RunningServer) -> dict[str, Any]:
    jobs = _jobs(srv)
    assert len(jobs) == 1, jobs
    return jobs[0]


def _line(out: str, key: str) -> str:
    return next(line for line in out.splitlines() if line.startswith(key + " ")).removeprefix(key + " ")


def _wait_state(srv: RunningServer, job_id: str, state: str, timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        job = srv.http.get(f"/v1/jobs/{job_id}").json()
        if job["state"] == state:
            return job
        assert time.monotonic() < deadline, f"job {job_id} never reached {state}: {job}"
        time.sleep(0.05)


# ---- kcoral python ---------------------------------------------------------------------------------------


def test_python_streams_log_sends_env_and_files_and_downloads_outputs(remote, senddir, capfd, monkeypatch):
    monkeypatch.setenv("C", "from-local")
    code = run([
        "python", "--send", str(senddir), "-e", "A=1", "-e", "C", "--", "s.py", "--flag", "x", "-e", "B=2",
    ])  # fmt: skip
    out, err = capfd.readouterr()
    assert code == 0, err
    job = _only_job(remote)
    assert job["verdict"] == "ok" and job["spec"]["argv"] == ["s.py", "--flag", "x", "-e", "B=2"]
    # args after -- reach the script untouched (-e B=2 was not taken as kcoral's option)
    assert ast.literal_eval(_line(out, "argv")) == ["s.py", "--flag", "x", "-e", "B=2"]
    assert _line(out, "env") == "1 from-local None"
    assert ast.literal_eval(_line(out, "files")) == ["argv.py", "data/in.txt", "s.py"]
    assert _line(out, "data") == "payload"
    # the job's stdout on stdout, its stderr on stderr; the server's log has both, in order
    assert "to stderr" not in out and "to stderr\n" in err
    log = remote.log(job["id"])  # the order of the two streams is the job's own (its stdout is block-buffered)
    assert log.replace("to stderr\n", "", 1) == out and len(log) == len(out) + len("to stderr\n")
    # outputs land in ./kcoral-out/JOB_ID
    dest = Path("kcoral-out") / job["id"]
    assert (dest / "res" / "out.txt").read_bytes() == b"42"
    assert (dest / "o.bin").read_bytes() == bytes(range(256))
    assert f"2 output file(s) in {dest}" in err
    assert summary_line(from_data(JobView, job)) in err
    assert job["image"]["digest"][len("sha256:") :][:12] in err
    assert "queued: position 2" not in err  # a free slot: at most "position 1" until it is dispatched


def test_first_positional_ends_kcoral_options(remote, senddir, capfd) -> None:
    assert run(["python", "--send", str(senddir), "argv.py", "--timeout", "3", "--json"]) == 0
    out = capfd.readouterr().out
    # --timeout and --json went to the script, not to kcoral: plain log on stdout, no JSON document
    assert out == "['argv.py', '--timeout', '3', '--json']\n"
    assert _only_job(remote)["spec"]["timeout_s"] == 600


def test_dash_c_and_dash_m(remote, senddir, capfd) -> None:
    assert run(["python", "--send", str(senddir), "-c", "import sys; print(sys.argv)", "a", "-e", "X"]) == 0
    assert capfd.readouterr().out == "['-c', 'a', '-e', 'X']\n"
    (senddir / "pkg").mkdir()
    (senddir / "pkg" / "__init__.py").write_text("")
    (senddir / "pkg" / "mod.py").write_text("import sys\nprint(__name__, __spec__.name, sys.argv[1:])\n")
    assert run(["python", "--send", str(senddir), "-m", "pkg.mod", "--n", "3"]) == 0
    assert capfd.readouterr().out == "__main__ pkg.mod ['--n', '3']\n"


def test_json_is_one_document_and_exit_code_is_the_jobs(remote, senddir, capfd, tmp_path) -> None:
    (senddir / "fail.py").write_text(
        "import os, sys\nprint('partial work')\n"
        "open(os.path.join(os.environ['KCORAL_OUTPUT_DIR'], 'o.bin'), 'wb').write(b'\\x00\\x01')\n"
        "sys.exit(3)\n"
    )
    code = run(["python", "--send", str(senddir), "--json", "-o", str(tmp_path / "o"), "fail.py"])
    out, _ = capfd.readouterr()
    doc = json.loads(out)  # the whole of stdout is one JSON document (the log is not streamed)
    assert code == 3
    job = _only_job(remote)
    assert doc["id"] == job["id"] and doc["verdict"] == "exit" and doc["exit_code"] == 3 == doc["job_exit_code"]
    assert doc["log"] == "partial work\n" == remote.log(job["id"]) and doc["log_truncated"] is False
    assert doc["output_dir"] == str(tmp_path / "o") and (tmp_path / "o" / "o.bin").read_bytes() == b"\x00\x01"
    assert not Path("kcoral-out").exists()


def test_timeout_exits_124(remote, senddir, capfd) -> None:
    (senddir / "slow.py").write_text("import time\nprint('started', flush=True)\ntime.sleep(60)\n")
    t0 = time.monotonic()
    assert run(["python", "--send", str(senddir), "--timeout", "2", "slow.py"]) == 124
    assert time.monotonic() - t0 < 20
    out, err = capfd.readouterr()
    assert out == "started\n" and ": timeout" in err
    # --json's exit_code is kcoral's own, the container's (killed: 137) beside it
    assert run(["python", "--send", str(senddir), "--timeout", "2", "--json", "slow.py"]) == 124
    doc = json.loads(capfd.readouterr().out)
    assert (doc["verdict"], doc["exit_code"], doc["job_exit_code"]) == ("timeout", 124, 137), doc


FLOOD = """\
import os
n = 0
while True:  # short lines, a thousand on each stream in turn, until the deadline
    for fd, mark in ((1, b"o"), (2, b"e")):
        for i in range(n, n + 1000):
            os.write(fd, mark + b"%08d\\n" % i)
    n += 1000
"""


def test_a_short_line_flood_on_both_streams_times_out_with_every_line_it_printed(
    server_factory, use, senddir, capfd
) -> None:
    """Issue 30, item 8: a job printing short lines on both streams as fast as it can is stopped at
    its deadline and its verdict recorded (exit 124), and its log, streamed and stored, has each
    stream's lines in order, whole, none missing, up to where it was killed."""
    srv = use(server_factory(limits=Limits(log_bytes=512 * MiB)))
    (senddir / "flood.py").write_text(FLOOD)
    assert run(["python", "--send", str(senddir), "--timeout", "2", "flood.py"]) == 124
    out, err = capfd.readouterr()
    job = _only_job(srv)
    assert (job["verdict"], job["exit_code"]) == ("timeout", 137), job
    printed = {STDOUT: out.encode(), STDERR: b"".join(re.findall(rb"^e\d{8}\n", err.encode(), re.MULTILINE))}
    for stream, mark in ((STDOUT, b"o"), (STDERR, b"e")):
        lines = printed[stream].splitlines(True)
        assert len(lines) > 1000, (mark, len(lines))
        assert lines == [mark + b"%08d\n" % i for i in range(len(lines))], mark
    stored = FrameReader().feed(srv.http.get(f"/v1/jobs/{job['id']}/log", params={"frames": "true"}).content)
    assert {p.stream for p in stored} == {STDOUT, STDERR}
    for stream in (STDOUT, STDERR):
        assert b"".join(p.data for p in stored if p.stream == stream) == printed[stream]


def test_output_limit_exits_123_with_the_capped_log(server_factory, use, senddir, capfd) -> None:
    srv = use(server_factory(limits=Limits(log_bytes=64 * KiB)))
    (senddir / "flood.py").write_text("import sys\nwhile True:\n    sys.stdout.write('y' * 1000 + '\\n')\n")
    assert run(["python", "--send", str(senddir), "--timeout", "60", "flood.py"]) == 123
    out = capfd.readouterr().out
    job = _only_job(srv)
    assert job["verdict"] == "output_limit" and job["log_bytes"] == 64 * KiB
    assert len(out) == 64 * KiB and out == srv.log(job["id"])


def test_memory_limit_exits_137(server_factory, use, senddir) -> None:
    srv = use(server_factory(limits=Limits(memory_bytes=256 * MiB)))
    (senddir / "hog.py").write_text("x = []\nwhile True:\n    x.append(bytearray(64 << 20))\n")
    assert run(["python", "--send", str(senddir), "--timeout", "60", "hog.py"]) == 137
    assert _only_job(srv)["verdict"] == "memory_limit"


def test_queue_positions_are_shown_once_each(server_factory, use, senddir, capfd) -> None:
    srv = use(server_factory(cpu_slots=1))
    first = srv.submit({"m.py": "import time\ntime.sleep(1.2)\n"}, ["m.py"])
    _wait_state(srv, first["id"], "running")
    srv.submit({"m.py": "import time\ntime.sleep(1.2)\n"}, ["m.py"])
    assert run(["python", "--send", str(senddir), "argv.py"]) == 0
    out, err = capfd.readouterr()
    assert out == "['argv.py']\n"
    assert err.count("queued: position 2") == 1 and err.count("queued: position 1") == 1
    assert err.index("queued: position 2") < err.index("queued: position 1")


def test_detach_prints_the_job_id_and_returns_while_it_runs(remote, senddir, capfd) -> None:
    (senddir / "slow.py").write_text("import time\ntime.sleep(60)\n")
    assert run(["python", "--send", str(senddir), "--detach", "slow.py"]) == 0
    out = capfd.readouterr().out
    job = _only_job(remote)
    assert out == f"{job['id']}\n"
    assert job["state"] in ("queued", "running")
    remote.http.post(f"/v1/jobs/{job['id']}/cancel")


def test_detached_work_is_waited_for_and_downloaded_by_a_piece_of_its_id(remote, senddir, capfd, tmp_path) -> None:
    script = "import os\nopen(os.environ['KCORAL_OUTPUT_DIR'] + '/r.txt', 'w').write('done')\nraise SystemExit(3)\n"
    (senddir / "w.py").write_text(script)
    ids = []
    for _ in range(3):
        assert run(["python", "--send", str(senddir), "--detach", "--timeout", "1m", "w.py"]) == 0
        ids.append(capfd.readouterr().out.strip())
    assert remote.http.get(f"/v1/jobs/{ids[0]}").json()["spec"]["timeout_s"] == 60  # "1m"
    suffix = ids[1].rsplit("-", 1)[1][:6]
    assert run(["wait", suffix, "--timeout", "90s"]) == 3  # the job's own exit code
    assert "exit code 3" in capfd.readouterr().err
    assert run(["download", ids[1][:20], "-o", str(tmp_path / "d")]) == 0  # a prefix of the whole id
    assert (tmp_path / "d" / "r.txt").read_text() == "done" and "1 output file(s)" in capfd.readouterr().err
    assert run(["status", ids[1].split("-")[0]]) == 2  # the date alone fits all three
    assert "matches 3 jobs" in capfd.readouterr().err
    for job_id in (ids[0], ids[2]):
        remote.wait(job_id)
    assert run(["jobs", "--limit", "2", "--json"]) == 0
    out, err = capfd.readouterr()
    assert [j["id"] for j in json.loads(out)] == [ids[2], ids[1]] and "--limit N or --all" in err
    assert run(["jobs", "--all", "--json"]) == 0
    assert [j["id"] for j in json.loads(capfd.readouterr().out)] == ids[::-1]


def test_a_wait_that_runs_out_exits_75_and_the_job_goes_on(remote, senddir, capfd) -> None:
    (senddir / "slow.py").write_text("import time\ntime.sleep(60)\n")
    assert run(["python", "--send", str(senddir), "--detach", "slow.py"]) == 0
    job_id = capfd.readouterr().out.strip()
    assert run(["wait", job_id, "--timeout", "1s"]) == 75
    assert "still" in capfd.readouterr().err
    assert remote.http.get(f"/v1/jobs/{job_id}").json()["state"] in ("queued", "running")
    remote.http.post(f"/v1/jobs/{job_id}/cancel")


def test_an_unknown_option_before_the_program_is_refused(remote, senddir, capfd) -> None:
    assert run(["python", "--send", str(senddir), "--fooo", "-c", "print(1)"]) == 2
    assert "unknown option '--fooo'" in capfd.readouterr().err
    assert run(["python", "--send", str(senddir), "-c", "import sys; print(sys.argv[1:])", "--fooo"]) == 0
    assert capfd.readouterr().out == "['--fooo']\n"  # after -c CODE: the program's own
    assert run(["python", "--send", str(senddir), "--timeout", "5x", "-c", "pass"]) == 2
    assert "not a duration" in capfd.readouterr().err


def test_ctrl_c_cancels_the_job_and_exits_130(remote, senddir) -> None:
    (senddir / "slow.py").write_text("import time\nprint('started', flush=True)\ntime.sleep(60)\n")
    env = os.environ | {"KCORAL_REMOTE": remote.url, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"}
    env.pop("KCORAL_TOKEN", None)
    # the CLI waits up to CANCEL_WAIT_S for the cancel to land, then exits: 60 s leaves room on a loaded machine.
    # SIGINT as a terminal delivers it: a test run started in the background of a shell inherits SIGINT
    # ignored, and Python then installs no KeyboardInterrupt handler, so the child gets the default back.
    with subprocess.Popen(
        [sys.executable, "-m", "kcoral", "python", "--send", str(senddir), "slow.py"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    ) as proc:  # fmt: skip
        try:
            assert proc.stdout is not None
            assert proc.stdout.readline() == b"started\n"  # the job runs and its log streams back
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 130, err.decode()
    job = remote.wait(_only_job(remote)["id"], timeout=20)
    assert job["verdict"] == "cancelled"
    assert f"cancelling job {job['id']}" in err.decode() and "Traceback" not in err.decode()
    assert f"kcoral: job {job['id']}: cancelled" in err.decode()


# ---- logs, status, jobs, cancel, gpus --------------------------------------------------------------------


def test_logs_follow_streams_until_the_job_ends(remote, capfd) -> None:
    script = "import time\nfor i in range(4):\n    print('line', i, flush=True)\n    time.sleep(0.1)\n"
    job = remote.submit({"m.py": script}, ["m.py"])
    assert run(["logs", job["id"], "--follow"]) == 0  # returns once the job is done
    assert capfd.readouterr().out == "line 0\nline 1\nline 2\nline 3\n"
    assert remote.http.get(f"/v1/jobs/{job['id']}").json()["state"] == "finished"
    assert run(["logs", job["id"], "--offset", "7"]) == 0
    assert capfd.readouterr().out == "line 1\nline 2\nline 3\n"


def test_logs_pass_the_servers_bytes_through_exactly(remote, capfdbinary) -> None:
    # NUL, CR, multi-byte UTF-8. Not invalid UTF-8 (Docker's json-file log driver turns it into U+FFFD
    # before the server stores it), nor a last line without a newline (the server can lose it).
    payload = "a\x00b\r\nz\u00e9\u4e2d\U0001f600 \t\n".encode() * 3
    job, _ = remote.run({"m.py": f"import sys\nsys.stdout.buffer.write({payload!r})\n"}, ["m.py"])
    assert remote.http.get(f"/v1/jobs/{job['id']}/log").content == payload
    assert run(["logs", job["id"]]) == 0
    assert capfdbinary.readouterr().out == payload
    assert run(["logs", job["id"], "--offset", "3"]) == 0
    assert capfdbinary.readouterr().out == payload[3:]


INTERLEAVED = (
    "import sys, time\n"
    "for i in range(3):\n"
    "    print('out', i, flush=True); time.sleep(0.05)\n"
    "    print('err', i, file=sys.stderr, flush=True); time.sleep(0.05)\n"
)


def test_logs_keep_stdout_and_stderr_apart_and_in_order(remote, capfd) -> None:
    job, log = remote.run({"m.py": INTERLEAVED}, ["m.py"])
    assert log == "out 0\nerr 0\nout 1\nerr 1\nout 2\nerr 2\n"  # the raw log: both, in order
    framed = remote.http.get(f"/v1/jobs/{job['id']}/log", params={"frames": "true"}).content
    pieces = FrameReader().feed(framed)
    assert [(p.stream, p.data) for p in pieces] == [
        (s, f"{name} {i}\n".encode()) for i in range(3) for s, name in ((STDOUT, "out"), (STDERR, "err"))
    ]
    assert run(["logs", job["id"]]) == 0
    assert capfd.readouterr() == ("out 0\nout 1\nout 2\n", "err 0\nerr 1\nerr 2\n")
    assert run(["logs", job["id"], "--stream", "stderr"]) == 0
    assert capfd.readouterr() == ("err 0\nerr 1\nerr 2\n", "")
    assert run(["logs", job["id"], "--stream", "stdout", "--offset", "6"]) == 0  # from "err 0"
    assert capfd.readouterr() == ("out 1\nout 2\n", "")


def test_status_jobs_cancel_json_and_human(remote, capfd) -> None:
    done, _ = remote.run({"m.py": "import sys; sys.exit(5)"}, ["m.py", "arg"])
    slow = remote.submit({"m.py": "import time\ntime.sleep(60)\n"}, ["m.py"])
    _wait_state(remote, slow["id"], "running")

    assert run(["status", done["id"], "--json"]) == 0  # exit 0 whatever the job's verdict
    doc = json.loads(capfd.readouterr().out)
    assert doc["id"] == done["id"] and doc["state"] == "finished" and doc["exit_code"] == 5
    assert run(["status", done["id"]]) == 0
    out = capfd.readouterr().out
    assert done["id"] in out and "exit 5" in out and "python m.py arg" in out

    assert run(["jobs", "--json"]) == 0
    assert {j["id"]: j["state"] for j in json.loads(capfd.readouterr().out)} == {
        done["id"]: "finished", slow["id"]: "running",
    }  # fmt: skip
    assert run(["jobs"]) == 0
    rows = {line.split()[0]: line for line in capfd.readouterr().out.splitlines()[1:]}
    assert "exit 5" in rows[done["id"]] and "running" in rows[slow["id"]]

    assert run(["cancel", slow["id"]]) == 0
    out = capfd.readouterr().out
    assert out.startswith(f"job {slow['id']}: ")
    assert remote.wait(slow["id"], timeout=20)["verdict"] == "cancelled"
    assert run(["cancel", slow["id"], "--json"]) == 0  # a finished job stays as it was
    assert json.loads(capfd.readouterr().out)["verdict"] == "cancelled"
    assert run(["status", slow["id"]]) == 0
    assert "cancelled" in capfd.readouterr().out


def test_gpus_shows_the_servers_health(remote, capfd) -> None:
    assert run(["gpus", "--json"]) == 0
    health = json.loads(capfd.readouterr().out)
    again = remote.http.get("/v1/health").json()
    for moving in ("time", "data_dir_free_bytes"):  # the server's clock and disk, read at each call
        assert isinstance(health.pop(moving), int | float) and isinstance(again.pop(moving), int | float)
    assert health == again
    assert health["gpus"] == [] and health["images"][0]["ref"] == remote.settings.image
    assert health["images"][0]["present"] is True
    assert run(["gpus"]) == 0
    out = capfd.readouterr().out
    assert "gpus: -" in out and remote.settings.image in out


def test_jobs_when_there_are_none(remote, capfd) -> None:
    assert run(["jobs"]) == 0
    assert capfd.readouterr().out == "no jobs\n"
    assert run(["jobs", "--json"]) == 0
    assert json.loads(capfd.readouterr().out) == []


# ---- errors and their exit codes -------------------------------------------------------------------------


def test_refused_env_exits_2_without_creating_a_job(remote, senddir, capfd) -> None:
    assert run(["python", "--send", str(senddir), "-e", "LD_PRELOAD=x", "s.py"]) == 2
    assert "LD_PRELOAD" in capfd.readouterr().err
    assert run(["python", "--send", str(senddir), "-e", "NOT_SET_LOCALLY_XYZ", "s.py"]) == 2
    assert "NOT_SET_LOCALLY_XYZ" in capfd.readouterr().err
    assert _jobs(remote) == []


def test_fifo_in_the_send_dir_exits_2_without_creating_a_job(remote, senddir, capfd) -> None:
    os.mkfifo(senddir / "data" / "pipe")
    assert run(["python", "--send", str(senddir), "s.py"]) == 2
    err = capfd.readouterr().err
    assert "pipe" in err and "FIFO" in err and "Traceback" not in err
    assert _jobs(remote) == []


def test_unauthorized_exits_77(server_factory, use, senddir, tmp_path, capfd) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("alice aaaaaaaaaaaaaaaaaaaa\n")
    srv = use(server_factory(tokens_file=tokens))
    assert run(["python", "--send", str(senddir), "--token", "wrong-token-xxxxxxxx", "s.py"]) == 77
    err = capfd.readouterr().err
    assert "unknown token" in err and "Traceback" not in err
    assert run(["jobs"]) == 77  # no token at all
    assert "needs a bearer token" in capfd.readouterr().err
    alice = {"Authorization": "Bearer aaaaaaaaaaaaaaaaaaaa"}
    assert _jobs(srv, **alice) == []  # nothing was created
    assert run(["python", "--send", str(senddir), "--token", "aaaaaaaaaaaaaaaaaaaa", "argv.py"]) == 0
    assert capfd.readouterr().out == "['argv.py']\n"
    assert [j["owner"] for j in _jobs(srv, **alice)] == ["alice"]


def test_unreachable_server_exits_69(senddir, monkeypatch, capfd) -> None:
    closed = f"http://127.0.0.1:{free_port()}"
    assert run(["jobs", "--remote", closed]) == 69
    assert "cannot reach" in capfd.readouterr().err
    monkeypatch.setenv("KCORAL_REMOTE", closed)
    assert run(["python", "--send", str(senddir), "s.py"]) == 69
    err = capfd.readouterr().err
    assert "cannot reach" in err and "Traceback" not in err


def test_missing_remote_is_a_usage_error(senddir, monkeypatch, capfd) -> None:
    monkeypatch.delenv("KCORAL_REMOTE", raising=False)
    assert run(["python", "--send", str(senddir), "s.py"]) == 2
    assert "KCORAL_REMOTE" in capfd.readouterr().err


def test_unknown_job_exits_2(remote, capfd) -> None:
    unknown = "20990101-000000-deadbeef"
    for command in ("status", "logs", "cancel", "wait", "download"):
        assert run([command, unknown]) == 2
        err = capfd.readouterr().err
        assert f"no job {unknown}" in err and "HTTP 404" in err
        assert run([command, "nope"]) == 2  # neither an id nor a piece of one
        assert "'nope' is not a job id" in capfd.readouterr().err
        assert run([command, "deadbeef"]) == 2  # a piece of none of this caller's jobs
        assert "no job of yours matches 'deadbeef'" in capfd.readouterr().err


def test_bad_usage_exits_2(remote, senddir, capfd) -> None:
    assert run(["python", "--send", str(senddir), "--gpus", "-1", "s.py"]) == 2
    assert run(["python", "--send", "/nonexistent-dir", "s.py"]) == 2
    assert run(["python", "--send", str(senddir)]) == 2
    assert run(["nosuchcommand"]) == 2
    capfd.readouterr()
    assert _jobs(remote) == []
