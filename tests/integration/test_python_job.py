"""A plain job end to end through the HTTP API on the real engine."""

from __future__ import annotations

import hashlib

import pytest

from kcoral.protocol import framing
from kcoral.runner import joblog

#: no timing asserted, nothing done to the engine that another file would see (scripts/test.sh)
pytestmark = pytest.mark.concurrent

SCRIPT = """
import os, sys
print("args", sys.argv[1:])
print("uid", os.getuid(), "cwd", os.getcwd())
with open(os.path.join(os.environ["KCORAL_OUTPUT_DIR"], "result.txt"), "w") as f:
    f.write("42")
sys.stderr.write("to stderr\\n")
"""


def test_job_runs_and_returns_output_and_files(server):
    job, log = server.run({"main.py": SCRIPT}, ["main.py", "a", "--b"])
    assert job["verdict"] == "ok" and job["exit_code"] == 0, job
    assert "args ['a', '--b']" in log
    assert "uid 65534 cwd /job/input" in log
    assert "to stderr" in log
    assert [o["path"] for o in job["outputs"]] == ["result.txt"]
    body = server.http.get(f"/v1/jobs/{job['id']}/outputs/result.txt").content
    assert body == b"42" and job["outputs"][0]["sha256"] == hashlib.sha256(b"42").hexdigest()


def test_job_records_what_ran(server):
    job, _ = server.run({"m.py": "pass"}, ["m.py"], env={"FOO": "1"})
    assert job["image"]["ref"] == server.settings.image
    assert job["image"]["digest"].startswith("sha256:")
    assert len(job["input_sha256"]) == 64 and job["input_bytes"] > 0
    assert job["env_names"] == ["FOO"] and job["spec"]["env"] == {}
    times = job["times"]
    assert times["created"] <= times["queued"] <= times["started"] <= times["finished"]
    assert job["slot"].startswith("cpu")


def test_nonzero_exit_is_the_jobs_own_code(server):
    job, _ = server.run({"m.py": "import sys; sys.exit(7)"}, ["m.py"])
    assert job["verdict"] == "exit" and job["exit_code"] == 7


def test_dash_c_and_dash_m(server):
    job, log = server.run({"pkg/__init__.py": "", "pkg/__main__.py": "print('module ran')"}, ["-m", "pkg"])
    assert job["verdict"] == "ok" and "module ran" in log
    job, log = server.run({}, ["-c", "print(6*7)"])
    assert job["verdict"] == "ok" and "42" in log


def test_log_follow_streams_until_the_end(server):
    script = "import time\nfor i in range(5):\n    print('line', i, flush=True)\n    time.sleep(0.1)\n"
    job = server.submit({"m.py": script}, ["m.py"])
    with server.http.stream("GET", f"/v1/jobs/{job['id']}/log", params={"follow": True}) as resp:
        text = b"".join(resp.iter_bytes()).decode()
    assert text.splitlines() == [f"line {i}" for i in range(5)]
    assert server.http.get(f"/v1/jobs/{job['id']}").json()["state"] == "finished"
    tail = server.http.get(f"/v1/jobs/{job['id']}/log", params={"offset": len("line 0\n")}).text
    assert tail.startswith("line 1")


def test_log_is_byte_exact_including_an_unterminated_last_line(server):
    script = "import sys\nsys.stdout.buffer.write(b'a\\xff\\xfe\\x00b\\r\\n\\xe2\\x82\\xac no newline')\n"
    for _ in range(3):
        job, _ = server.run({"m.py": script}, ["m.py"])
        raw = server.http.get(f"/v1/jobs/{job['id']}/log").content
        assert raw == b"a\xff\xfe\x00b\r\n\xe2\x82\xac no newline"
        assert job["log_bytes"] == len(raw)


def test_lines_written_in_pieces_on_both_streams_do_not_interleave_inside_a_line(server):
    # unbuffered print writes a line's text and its newline apart; the engine copies each pipe as it
    # reads it, so the pieces come in this order (paced to come in reads of their own)
    script = "import os, time\nfor fd, piece in ((1, b'out'), (2, b'err'), (1, b'\\n'), (2, b'\\n')):\n"
    script += "    os.write(fd, piece)\n    time.sleep(0.1)\n"
    job, _ = server.run({"m.py": script}, ["m.py"])
    assert job["verdict"] == "ok", job
    assert server.http.get(f"/v1/jobs/{job['id']}/log").content == b"out\nerr\n"


def test_a_job_switching_streams_on_every_line_keeps_its_bytes_and_a_bounded_index(server, monkeypatch):
    # the log takes whole lines (a partial line waits for its end), and the engine reads each stream
    # on its own: lines written faster than it reads come in runs, so the job paces them
    monkeypatch.setattr(joblog, "MAX_SWITCHES", 16)
    script = "import os, time\nfor i in range(200):\n    os.write(1 + i % 2, b'oe'[i % 2:i % 2 + 1] + b'\\n')\n"
    script += "    time.sleep(0.005)\n"
    job, _ = server.run({"m.py": script}, ["m.py"])
    assert job["verdict"] == "ok" and job["log_bytes"] == 400, job
    framed = server.http.get(f"/v1/jobs/{job['id']}/log", params={"frames": "true"}).content
    pieces = framing.FrameReader().feed(framed)
    assert b"".join(p.data for p in pieces).count(b"o\n") == 100 and len(pieces) == 17
    assert all(set(p.data) == {ord("o" if p.stream == framing.STDOUT else "e"), 10} for p in pieces[:-1])
    assert pieces[-1].stream == framing.MIXED  # past the cap the rest is one piece, shown on stdout
    index = joblog.streams_path(server.services.store.paths(job["id"]).log)
    assert index.stat().st_size == 17 * 9
