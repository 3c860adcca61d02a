"""A rerun evaluates with the original job's image (by digest) and task snapshot, even after the
server's image tag and task folder have changed; a new evaluation sees the changes. Both halves are
checked, so a rerun that followed the tag or re-read the task folder would fail here."""

from __future__ import annotations

import contextlib
import io
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest

from tests.attacks.judging import CANDIDATES
from tests.conftest import RunningServer, make_tar, wait_for_stopped_servers

#: slow (~12 s: two evaluations and an image rebuilt) and what it checks changes seldom: scripts/test-nightly.sh
#: runs it, not CI
pytestmark = pytest.mark.nightly

REPO = Path(__file__).resolve().parents[2]
TAG = "kcoral-test-pin:run"


@pytest.fixture
def retaggable(docker_client: docker.DockerClient, job_image: str) -> Iterator[tuple[str, str]]:
    """(the job image's id, the id of a derived image that differs only by a label); TAG -> the first."""
    first = docker_client.images.get(job_image)
    second, _ = docker_client.images.build(
        fileobj=io.BytesIO(f"FROM {job_image}\nLABEL kcoral.test=b\n".encode()), tag="kcoral-test-pin:b", rm=True
    )
    first.tag(TAG)
    yield first.id, second.id
    wait_for_stopped_servers()  # the test's servers stop in the background: their containers use these
    for ref in (TAG, "kcoral-test-pin:b"):
        with contextlib.suppress(docker.errors.ImageNotFound):
            docker_client.images.remove(ref, noprune=True)


def evaluate(server: RunningServer) -> dict[str, Any]:
    """A check (`kcoral eval --check`: the public workloads, untimed) of the honest candidate: what is
    pinned (the image its containers ran in, the task snapshot it read) is in its receipt as in a timed
    evaluation's, and a rerun copies the spec, check and all; no score is read here."""
    source = (CANDIDATES / "honest" / "solution.py").read_bytes()
    spec = {"kind": "eval", "task": "demo/softmax", "timeout_s": 300, "check": True}
    r = server.http.post("/v1/jobs", json=spec)
    assert r.status_code == 201, r.text
    job_id = r.json()["id"]
    assert server.http.put(f"/v1/jobs/{job_id}/input", content=make_tar({"solution.py": source})).status_code == 200
    return server.wait(job_id, timeout=400)


def receipt(server: RunningServer, job_id: str) -> dict[str, Any]:
    r = server.http.get(f"/v1/jobs/{job_id}/outputs/receipt.json")
    assert r.status_code == 200, r.text
    return r.json()


def test_rerun_keeps_the_pinned_image_and_task(
    retaggable: tuple[str, str], server_factory: Any, docker_client: docker.DockerClient, tmp_path: Path
) -> None:
    """(``retaggable`` comes first so that its images are removed after the server, and with it the
    containers it keeps ready, has stopped.)"""
    first_id, second_id = retaggable
    tasks = tmp_path / "tasks"
    shutil.copytree(REPO / "tasks", tasks, ignore=shutil.ignore_patterns("__pycache__"))
    server = server_factory(image=TAG, tasks_dirs=(tasks,))
    old = evaluate(server)
    assert old["verdict"] == "ok" and old["image"]["digest"] == first_id, old
    old_receipt = receipt(server, old["id"])

    # the operator moves the tag to another image and edits the task
    docker_client.images.get(second_id).tag(TAG)
    manifest = tasks / "demo" / "softmax" / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"version": "1"', '"version": "2"'))

    r = server.http.post(f"/v1/jobs/{old['id']}/rerun")
    assert r.status_code == 201, r.text
    rerun = server.wait(r.json()["id"], timeout=400)
    rerun_receipt = receipt(server, rerun["id"])
    assert rerun["spec"]["check"] is True and rerun["verdict"] == "ok", rerun
    assert rerun["image"]["digest"] == first_id == rerun_receipt["image"], rerun
    assert rerun_receipt["task_sha256"] == old_receipt["task_sha256"] and rerun_receipt["task_version"] == "1"

    fresh = evaluate(server)
    fresh_receipt = receipt(server, fresh["id"])
    assert fresh["image"]["digest"] == second_id == fresh_receipt["image"], fresh
    assert fresh_receipt["task_version"] == "2" and fresh_receipt["task_sha256"] != old_receipt["task_sha256"]
