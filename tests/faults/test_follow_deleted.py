"""A job deleted while its log is followed (the server deletes a job whose upload it refused): each
follower's body ends whole, a framed one with a last status frame that says so, and the server logs
no traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kcoral.protocol.framing import STATUS, FrameReader, Piece
from kcoral.runner.api import DELETED
from tests.serverproc import ServerProcess, serving

#: a server of its own, the engine's faults behind its own proxy (tests.faults.engine_proxy), its containers
#: found by its instance label: nothing another file sees; no timing asserted (scripts/test.sh)
pytestmark = pytest.mark.concurrent


def test_followers_of_a_job_deleted_under_them_get_a_whole_body_and_a_last_status_frame(
    tmp_path: Path, job_image: str
) -> None:
    log = tmp_path / "server.log"
    server = ServerProcess(tmp_path / "data", job_image, log=log)
    with serving(server) as http:
        r = http.post("/v1/jobs", json={"argv": ["m.py"]})
        assert r.status_code == 201, r.text
        job_id = r.json()["id"]
        url = f"/v1/jobs/{job_id}/log"
        framed = {"follow": "true", "frames": "true", "status": "true"}
        with (
            http.stream("GET", url, params=framed) as with_status,
            http.stream("GET", url, params={"follow": "true"}) as plain,
        ):
            assert (with_status.status_code, plain.status_code) == (200, 200)
            reader, pieces = FrameReader(), list[Piece]()
            chunks = with_status.iter_bytes()
            while not pieces:  # the job's first view: the follower is in its loop
                pieces += reader.feed(next(chunks))
            assert json.loads(pieces[0].data)["state"] == "created"

            refused = http.put(f"/v1/jobs/{job_id}/input", content=b"not a tar at all")
            assert refused.status_code == 400, refused.text
            assert http.get(f"/v1/jobs/{job_id}").status_code == 404  # the server deleted it

            for chunk in chunks:  # to the body's end: a cut one raises httpx.RemoteProtocolError
                pieces += reader.feed(chunk)
            assert plain.read() == b""
        last = pieces[-1]
        assert last.stream == STATUS and all(p.stream == STATUS for p in pieces)
        view = json.loads(last.data)
        assert (view["id"], view["state"], view["verdict"]) == (job_id, "finished", "cancelled")
        assert view["reason"] == DELETED
        assert http.get("/v1/health").status_code == 200
    text = log.read_text()
    assert "Traceback" not in text and "Exception in ASGI application" not in text, text
