"""Hostile requests over real HTTP: each one once answered 500 (or cut the connection, or let a job
through twice). Every answer here is a 4xx in kcoral's own error shape, with nothing left behind."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import lzma
import random
import socket
import tarfile
import threading
import time
from typing import Any

import httpx
import pytest

from kcoral.runner.limits import Limits
from tests.conftest import RunningServer, make_tar

#: no timing asserted, nothing done to the engine that another file would see (scripts/test.sh)
pytestmark = pytest.mark.concurrent


def error(r: httpx.Response, status: int) -> dict[str, Any]:
    """The body of an error answer, checked to be ours: {"error": code, "message": text}."""
    assert r.status_code == status, (r.status_code, r.text)
    body = r.json()
    assert set(body) == {"error", "message"} and body["message"], body
    return body


def create(srv: RunningServer, **spec: Any) -> str:
    r = srv.http.post("/v1/jobs", json={"argv": ["m.py"], **spec})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def job_count(srv: RunningServer) -> int:
    return len(srv.http.get("/v1/jobs", params={"limit": 500}).json())


def leftovers(srv: RunningServer, job_id: str) -> list[str]:
    root = srv.services.store.paths(job_id).root
    return sorted(p.name for p in root.iterdir()) if root.exists() else []


# ----- bodies and parameters


@pytest.mark.parametrize(
    "body",
    [
        '{"argv": ["\\ud800"]}',
        '{"argv": ["m.py"], "env": {"A": "\\udfff"}}',
        '{"argv": ["m.py"], "env": {"\\ud800": "x"}}',
        '{"kind": "eval", "task": "\\ud800"}',
        '{"argv": ["m.py"], "\\ud800": 1}',
    ],
)
def test_a_lone_surrogate_anywhere_in_a_spec_is_a_400(server: RunningServer, body: str) -> None:
    before = job_count(server)
    r = server.http.post("/v1/jobs", content=body, headers={"content-type": "application/json"})
    assert error(r, 400)["error"] == "bad_request"
    assert job_count(server) == before


@pytest.mark.parametrize(
    "body",
    [
        '{"argv": ["m.py"], "timeout_s": 1' + "0" * 400 + "}",  # no float holds it: was a 500 (OverflowError)
        '{"kind": "eval", "task": "demo/softmax", "timeout_s": -1' + "0" * 400 + "}",
        '{"argv": ["m.py"], "timeout_s": 1e999}',
    ],
)
def test_a_number_no_float_or_64_bits_hold_is_a_400(server: RunningServer, body: str) -> None:
    before = job_count(server)
    r = server.http.post("/v1/jobs", content=body, headers={"content-type": "application/json"})
    assert "timeout_s: must be a finite number" in error(r, 400)["message"]
    assert job_count(server) == before


def test_a_nesting_bomb_and_broken_json_are_400s_in_our_shape(server: RunningServer) -> None:
    for body in ("[" * 5000 + "]" * 5000, '{"argv": [', "\xff\xfe"):
        r = server.http.post("/v1/jobs", content=body.encode("latin-1"), headers={"content-type": "application/json"})
        error(r, 400)


@pytest.mark.parametrize("kind", [["python"], {"python": 1}, 3, True])
def test_a_kind_that_is_not_text_is_a_400_not_a_lookup_that_fails(server: RunningServer, kind: object) -> None:
    before = job_count(server)
    r = server.http.post("/v1/jobs", json={"kind": kind, "argv": ["m.py"]})
    assert "unknown job kind" in error(r, 400)["message"]
    assert job_count(server) == before


def test_no_such_route_and_a_wrong_method_answer_in_our_shape(server: RunningServer) -> None:
    assert error(server.http.get("/v1/nothing"), 404)["error"] == "not_found"
    wrong = server.http.delete("/v1/jobs")
    assert error(wrong, 405)["error"] == "method_not_allowed" and "allow" in wrong.headers
    assert error(server.http.get("/v1/jobs/..%2F..%2Fetc"), 404)["error"] == "not_found"
    assert error(server.http.get("/v1/jobs/%ED%A0%80"), 404)["error"] == "not_found"


def test_a_log_offset_far_past_the_end_is_an_empty_answer(server: RunningServer) -> None:
    job = server.submit({"m.py": "print('hi')"}, ["m.py"])
    server.wait(job["id"])
    far = server.http.get(f"/v1/jobs/{job['id']}/log", params={"offset": 17592186044416})
    assert far.status_code == 200 and far.content == b""
    assert server.http.get(f"/v1/jobs/{job['id']}/log", params={"offset": 1}).content == b"i\n"
    error(server.http.get(f"/v1/jobs/{job['id']}/log", params={"offset": 1 << 63}), 400)
    error(server.http.get(f"/v1/jobs/{job['id']}/log", params={"offset": -1}), 400)


# ----- uploads


def tar_of(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _pax_bomb() -> bytes:
    """16 MiB of PAX attributes in a few KiB of gzip: tarfile would read them whole."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT, pax_headers={"comment": "c" * (16 << 20)}):
        pass
    return gzip.compress(buf.getvalue())


def _physical_escape() -> bytes:
    """Links that stay inside lexically (a/x -> '.') but not on disk (a/y is a, so a/x is a/../..)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, kind, link in (("a", tarfile.DIRTYPE, ""), ("a/y", tarfile.SYMTYPE, "."),
                                 ("a/x", tarfile.SYMTYPE, "y/../..")):  # fmt: skip
            info = tarfile.TarInfo(name)
            info.type, info.linkname = kind, link
            tar.addfile(info)
    return buf.getvalue()


BIG = random.Random(0).randbytes(200_000)  # incompressible: a cut stream is cut inside the member
HOSTILE_UPLOADS = {
    "truncated gzip": (gzip.compress(tar_of({"a": BIG}))[:3000], 400, "truncated"),
    "truncated xz": (lzma.compress(tar_of({"a": BIG}))[:3000], 400, "truncated"),
    "file and folder": (tar_of({"a": b"1", "a/b": b"2"}), 400, "both as a file and as a folder"),
    "long name": (tar_of({"n" * 256: b"1"}), 400, "a name over 255 bytes"),
    "long path": (tar_of({"/".join(["d" * 250] * 17): b"1"}), 400, "a path of 4266 bytes"),
    "pax bomb": (_pax_bomb(), 413, "tar metadata header"),
    "physical escape": (_physical_escape(), 400, "link leading outside"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_UPLOADS))
def test_hostile_uploads_are_4xx_and_leave_nothing(server: RunningServer, case: str) -> None:
    data, status, message = HOSTILE_UPLOADS[case]
    job_id = create(server)
    body = error(server.http.put(f"/v1/jobs/{job_id}/input", content=data), status)
    assert message in body["message"], body
    assert server.http.get(f"/v1/jobs/{job_id}").status_code == 404 and leftovers(server, job_id) == []


def test_simultaneous_uploads_to_one_job_run_it_once(server: RunningServer) -> None:
    job_id = create(server)
    tar = make_tar({"m.py": "print('once')\n", "pad": BIG * 4})
    start = threading.Barrier(4)
    answers: list[int] = []

    def put() -> None:
        with httpx.Client(base_url=server.url, timeout=60) as http:
            start.wait()
            answers.append(http.put(f"/v1/jobs/{job_id}/input", content=tar).status_code)

    threads = [threading.Thread(target=put) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(answers) == [200, 409, 409, 409]
    job = server.wait(job_id)
    assert job["verdict"] == "ok" and server.log(job_id) == "once\n"


def test_a_dropped_upload_removes_the_job_and_its_partial_file(
    server: RunningServer, caplog: pytest.LogCaptureFixture
) -> None:
    job_id = create(server)
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(
            f"PUT /v1/jobs/{job_id}/input HTTP/1.1\r\nHost: x\r\nContent-Length: {50 << 20}\r\n\r\n".encode()
            + b"\0" * (4 << 20)
        )
        time.sleep(0.5)
    deadline = time.monotonic() + 10
    while server.http.get(f"/v1/jobs/{job_id}").status_code != 404:
        assert time.monotonic() < deadline, "the job of a dropped upload is still there"
        time.sleep(0.05)
    assert leftovers(server, job_id) == []
    assert not [r for r in caplog.records if r.exc_info], "a dropped upload logged a traceback"


def test_an_upload_to_a_job_cancelled_meanwhile_does_not_queue_it(server: RunningServer) -> None:
    job_id = create(server)
    tar = make_tar({"m.py": "print('must not run')\n"})
    cancelled = threading.Event()

    def slow() -> Any:
        yield tar[:1024]
        assert cancelled.wait(10)
        yield tar[1024:]

    def cancel() -> None:
        time.sleep(0.3)
        server.http.post(f"/v1/jobs/{job_id}/cancel")
        cancelled.set()

    threading.Thread(target=cancel).start()
    with httpx.Client(base_url=server.url, timeout=30) as http:
        r = http.put(f"/v1/jobs/{job_id}/input", content=slow())
    assert "cancelled while its input was received" in error(r, 409)["message"]
    job = server.http.get(f"/v1/jobs/{job_id}").json()
    assert (job["state"], job["verdict"], job["log_bytes"]) == ("finished", "cancelled", 0)


# ----- the per-token cap and reruns


def test_the_waiting_cap_holds_under_simultaneous_submissions(server_factory: Any) -> None:
    srv = server_factory(limits=Limits(queued_per_token=16))
    start = threading.Barrier(40)
    answers: list[httpx.Response] = []

    def post() -> None:
        with httpx.Client(base_url=srv.url, timeout=60) as http:
            start.wait()
            answers.append(http.post("/v1/jobs", json={"argv": ["m.py"]}))

    threads = [threading.Thread(target=post) for _ in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    codes = sorted(r.status_code for r in answers)
    assert codes == [201] * 16 + [429] * 24
    refused = next(r for r in answers if r.status_code == 429)
    assert error(refused, 429)["error"] == "too_many_jobs" and int(refused.headers["retry-after"]) > 0
    assert job_count(srv) == 16


def test_a_rerun_of_a_job_that_never_got_its_upload_is_a_409_and_makes_no_job(server: RunningServer) -> None:
    job_id = create(server)
    server.http.post(f"/v1/jobs/{job_id}/cancel")
    before = job_count(server)
    assert "never received its upload" in error(server.http.post(f"/v1/jobs/{job_id}/rerun"), 409)["message"]
    assert job_count(server) == before
    waiting = [j for j in server.http.get("/v1/jobs").json() if j["state"] in ("created", "queued")]
    assert waiting == []


def test_json_error_bodies_are_valid_json_even_for_hostile_text(server: RunningServer) -> None:
    r = server.http.post("/v1/jobs", json={"argv": ["m.py"], "\x1b]0;x\x07": 1})
    body = error(r, 400)
    assert "\x1b" not in body["message"] and "\\x1b" in body["message"]
    json.dumps(body)


def test_with_tokens_only_liveness_answers_without_one(server_factory: Any, tmp_path: Any) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("alice aaaaaaaaaaaaaaaaaaaa\n")
    srv = server_factory(tokens_file=tokens)
    assert srv.http.get("/v1/health").json() == {"ok": True, "auth": True}
    assert error(srv.http.get("/openapi.json"), 401)["error"] == "unauthorized"
    assert error(srv.http.get("/docs"), 404)["error"] == "not_found"
    alice = {"Authorization": "Bearer aaaaaaaaaaaaaaaaaaaa"}
    full = srv.http.get("/v1/health", headers=alice).json()
    assert {"docker", "gpus", "leases", "images", "limits"} <= set(full)
    assert full["data_dir_own_filesystem"] is False  # a folder under the test's tmp_path
    assert srv.http.get("/openapi.json", headers=alice).json()["info"]["title"] == "kcoral"


def test_a_dropped_log_follower_or_download_harms_nothing(
    server: RunningServer, caplog: pytest.LogCaptureFixture
) -> None:
    script = (
        "import os, time\nprint('first', flush=True)\n"
        "open(os.environ['KCORAL_OUTPUT_DIR'] + '/big.bin', 'wb').write(os.urandom(8 << 20))\n"
        "time.sleep(1)\nprint('last', flush=True)\n"
    )
    job_id = server.submit({"m.py": script}, ["m.py"])["id"]
    with httpx.stream("GET", f"{server.url}/v1/jobs/{job_id}/log", params={"follow": True}, timeout=30) as log:
        assert next(log.iter_lines()) == "first"  # and then the follower goes away
    job = server.wait(job_id)
    assert job["verdict"] == "ok" and server.log(job_id) == "first\nlast\n"
    with httpx.stream("GET", f"{server.url}/v1/jobs/{job_id}/outputs/big.bin", timeout=30) as download:
        next(download.iter_bytes())  # a first chunk, then the connection is dropped
    whole = server.http.get(f"/v1/jobs/{job_id}/outputs/big.bin").content
    assert len(whole) == 8 << 20 and hashlib.sha256(whole).hexdigest() == job["outputs"][0]["sha256"]
    assert not [r for r in caplog.records if r.exc_info], "a dropped reader logged a traceback"


DEEP_OUTPUT = """import os, time
fd = os.open(os.environ['KCORAL_OUTPUT_DIR'], os.O_RDONLY)
for _ in range(1200):
    os.mkdir('d', dir_fd=fd)
    inner = os.open('d', os.O_RDONLY, dir_fd=fd)
    os.close(fd)
    fd = inner
print('nested', flush=True)
time.sleep(5)
"""


def test_an_output_tree_nested_too_deep_stops_the_job_and_is_removed(server: RunningServer) -> None:
    """A 1200-deep chain once made the clean-up raise RecursionError: an ok job became an
    infrastructure error and its raw folder stayed on disk."""
    job = server.wait(server.submit({"m.py": DEEP_OUTPUT}, ["m.py"])["id"], 60)
    assert job["verdict"] == "output_limit" and "32 folders deep" in job["reason"], job
    assert not server.services.store.paths(job["id"]).raw_out.exists()
