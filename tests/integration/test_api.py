"""The job API: upload validation, cancel, auth, caps and queue positions, over real HTTP."""

from __future__ import annotations

import io
import tarfile
import time

import pytest

from kcoral.runner.limits import Limits

#: no timing asserted, nothing done to the engine that another file would see (scripts/test.sh)
pytestmark = pytest.mark.concurrent


def _tar(add) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        add(tar)
    return buf.getvalue()


def _member(tar: tarfile.TarFile, name: str, kind: bytes = tarfile.REGTYPE, data: bytes = b"x", link: str = "") -> None:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)


BAD_UPLOADS = {
    "absolute": (lambda t: _member(t, "/etc/evil"), "absolute path"),
    "dotdot": (lambda t: _member(t, "a/../../evil"), "a path leaving its folder"),
    "symlink-out": (lambda t: _member(t, "l", tarfile.SYMTYPE, link="../../etc/passwd"), "link leading outside"),
    "symlink-abs": (lambda t: _member(t, "l", tarfile.SYMTYPE, link="/etc/passwd"), "link leading outside"),
    "hardlink": (lambda t: (_member(t, "a"), _member(t, "b", tarfile.LNKTYPE, link="a")), "hard link"),
    "device": (lambda t: _member(t, "dev", tarfile.CHRTYPE), "device, FIFO"),
    "fifo": (lambda t: _member(t, "p", tarfile.FIFOTYPE), "device, FIFO"),
    "through-link": (lambda t: (_member(t, "d", tarfile.SYMTYPE, link="."), _member(t, "d/x")), "through a symbolic"),
}


@pytest.mark.parametrize("case", sorted(BAD_UPLOADS))
def test_malformed_uploads_get_4xx_and_no_job(server, case):
    build, message = BAD_UPLOADS[case]
    job = server.http.post("/v1/jobs", json={"argv": ["m.py"]}).json()
    r = server.http.put(f"/v1/jobs/{job['id']}/input", content=_tar(build))
    assert r.status_code == 400, r.text
    assert message in r.json()["message"]
    assert server.http.get(f"/v1/jobs/{job['id']}").status_code == 404


def test_not_a_tar_and_budgets(server_factory):
    srv = server_factory(limits=Limits(upload_bytes=64 << 10, upload_files=10))
    job = srv.http.post("/v1/jobs", json={"argv": ["m.py"]}).json()
    r = srv.http.put(f"/v1/jobs/{job['id']}/input", content=b"this is not a tar archive" * 100)
    assert r.status_code == 400 and "not a readable tar" in r.json()["message"]
    job = srv.http.post("/v1/jobs", json={"argv": ["m.py"]}).json()
    r = srv.http.put(f"/v1/jobs/{job['id']}/input", content=_tar(lambda t: [_member(t, f"f{i}") for i in range(20)]))
    assert r.status_code == 413 and "more than 10 entries" in r.json()["message"]
    job = srv.http.post("/v1/jobs", json={"argv": ["m.py"]}).json()
    r = srv.http.put(f"/v1/jobs/{job['id']}/input", content=_tar(lambda t: _member(t, "big", data=b"0" * (100 << 10))))
    assert r.status_code == 413


def test_zip_bomb_is_refused_by_unpacked_size(server_factory):
    srv = server_factory(limits=Limits(unpacked_bytes=10 << 20))
    import gzip

    bomb = gzip.compress(_tar(lambda t: _member(t, "zeros", data=b"\0" * (50 << 20))))
    assert len(bomb) < 200 << 10
    job = srv.http.post("/v1/jobs", json={"argv": ["m.py"]}).json()
    r = srv.http.put(f"/v1/jobs/{job['id']}/input", content=bomb)
    assert r.status_code == 413 and "unpacks to more than" in r.json()["message"]


def test_bad_specs_get_400(server):
    for body, message in [
        ({"argv": []}, "argv is empty"),
        ({"argv": "m.py"}, "argv"),
        ({"argv": ["m.py"], "timeout_s": -1}, "timeout_s"),
        ({"argv": ["m.py"], "timeout_s": 1e9}, "over this server's limit"),
        ({"argv": ["m.py"], "kind": "rm -rf"}, "unknown job kind"),
        ({"argv": ["m.py"], "timout_s": 5}, "python.timout_s: no such field (a typo is refused)"),
        ({"kind": "eval", "task": "demo/softmax", "env": {"A": "1"}}, "eval.env: no such field (a typo is refused)"),
        ({"argv": ["a\x00b"]}, "NUL"),
    ]:
        r = server.http.post("/v1/jobs", json=body)
        assert r.status_code == 400, (body, r.text)
        assert message in r.json()["message"], (body, r.json())
    r = server.http.post("/v1/jobs", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 400
    assert server.http.get("/v1/jobs/nope").status_code == 404
    job = server.submit({"m.py": "pass"}, ["m.py"])
    assert server.http.put(f"/v1/jobs/{job['id']}/input", content=b"").status_code == 409


def test_cancel_running_and_queued(server_factory):
    srv = server_factory(cpu_slots=1)
    running = srv.submit({"m.py": "import time\nprint('go', flush=True)\ntime.sleep(60)"}, ["m.py"])
    queued = srv.submit({"m.py": "print('never')"}, ["m.py"])
    deadline = time.monotonic() + 30
    while srv.http.get(f"/v1/jobs/{running['id']}").json()["state"] != "running":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert srv.http.get(f"/v1/jobs/{queued['id']}").json()["queue_position"] == 1
    assert srv.http.post(f"/v1/jobs/{queued['id']}/cancel").json()["verdict"] == "cancelled"
    srv.http.post(f"/v1/jobs/{running['id']}/cancel")
    job = srv.wait(running["id"], timeout=20)
    assert job["verdict"] == "cancelled"
    assert srv.wait(queued["id"])["log_bytes"] == 0


def test_auth_and_per_token_cap(server_factory, tmp_path):
    tokens = tmp_path / "tokens"
    tokens.write_text("# team tokens\nalice aaaaaaaaaaaaaaaaaaaa\nbob bbbbbbbbbbbbbbbbbbbbbbb\n")
    srv = server_factory(tokens_file=tokens, limits=Limits(queued_per_token=2))
    assert srv.http.get("/v1/jobs").status_code == 401
    assert srv.http.get("/v1/jobs", headers={"Authorization": "Bearer wrong-token-xxxxxxxx"}).status_code == 401
    alice = {"Authorization": "Bearer aaaaaaaaaaaaaaaaaaaa"}
    bob = {"Authorization": "Bearer bbbbbbbbbbbbbbbbbbbbbbb"}
    created = [srv.http.post("/v1/jobs", json={"argv": ["m.py"]}, headers=alice) for _ in range(3)]
    assert [r.status_code for r in created] == [201, 201, 429]
    assert created[0].json()["owner"] == "alice"
    # one owner cannot see another's jobs
    assert srv.http.get(f"/v1/jobs/{created[0].json()['id']}", headers=bob).status_code == 404
    assert srv.http.get("/v1/jobs", headers=bob).json() == []


def test_a_followed_log_carries_the_jobs_status_and_ends_with_its_final_view(server_factory):
    """``status=true``: the queue position while a job waits, then how it ended as the stream's last
    frame, after its last log byte; the status frames are not log bytes (offsets skip them)."""
    import json

    from kcoral.protocol.framing import STATUS, STDERR, STDOUT, FrameReader

    srv = server_factory(cpu_slots=1)
    blocker = srv.submit({"m.py": "import time\nprint('go', flush=True)\ntime.sleep(60)"}, ["m.py"])
    deadline = time.monotonic() + 30
    while srv.http.get(f"/v1/jobs/{blocker['id']}").json()["state"] != "running":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    job = srv.submit({"m.py": "import sys\nprint('out')\nprint('err', file=sys.stderr)"}, ["m.py"])
    params = {"follow": "true", "frames": "true", "status": "true"}
    reader, pieces = FrameReader(), []
    with srv.http.stream("GET", f"/v1/jobs/{job['id']}/log", params=params, timeout=60) as response:
        assert response.status_code == 200
        for chunk in response.iter_bytes():
            pieces += reader.feed(chunk)
            if len(pieces) == 1:  # the waiting job's first frame: its view, queued behind the blocker
                srv.http.post(f"/v1/jobs/{blocker['id']}/cancel")
    views = [json.loads(p.data) for p in pieces if p.stream == STATUS]
    log = [(p.stream, p.data) for p in pieces if p.stream != STATUS]
    assert views[0]["state"] == "queued" and views[0]["queue_position"] == 1
    assert pieces[-1].stream == STATUS and views[-1]["state"] == "finished" and views[-1]["verdict"] == "ok"
    assert b"".join(d for s, d in log if s == STDOUT) == b"out\n"
    assert b"".join(d for s, d in log if s == STDERR) == b"err\n"
    assert views[-1]["log_bytes"] == sum(len(d) for _, d in log)
    assert views[-1] == srv.http.get(f"/v1/jobs/{job['id']}").json()
    # from an offset: the log's bytes after it, and the view again
    r = srv.http.get(f"/v1/jobs/{job['id']}/log", params={**params, "offset": "2"})
    again = FrameReader().feed(r.content)
    assert b"".join(p.data for p in again if p.stream != STATUS) == b"".join(d for _, d in log)[2:]
    assert again[-1].stream == STATUS
    # without status=true nothing but the log (an old client's stream is unchanged)
    r = srv.http.get(f"/v1/jobs/{job['id']}/log", params={"frames": "true"})
    assert all(p.stream != STATUS for p in FrameReader().feed(r.content))


def test_a_followed_log_is_read_when_it_grows_not_when_a_poll_comes_round(server_factory):
    """A quiet job's follower waits for its log to grow (the log's writer wakes it: runner.changes),
    with a read a second at most otherwise: each line the job prints after a quiet spell longer than
    that second reaches the follower within a fraction of it (the median of four under 0.3 s; with a
    poll a second and no wake it would be half a second on average)."""
    srv = server_factory(cpu_slots=1)
    script = "import time\nfor _ in range(4):\n    time.sleep(1.3)\n    print(time.time(), flush=True)\n"
    job = srv.submit({"m.py": script}, ["m.py"])
    delays, buffered = [], b""
    with srv.http.stream("GET", f"/v1/jobs/{job['id']}/log", params={"follow": "true"}, timeout=60) as response:
        assert response.status_code == 200
        for chunk in response.iter_bytes():
            now = time.time()
            buffered += chunk
            *lines, buffered = buffered.split(b"\n")
            delays += [now - float(line) for line in lines if line.strip()]
    assert len(delays) == 4, delays
    assert sorted(delays)[1] < 0.3 and sorted(delays)[2] < 0.3, delays
