"""Containers started ahead of time (runner.standby) on the real engine: a job that runs in one sees
what it would have seen in a container of its own, and no standby ever serves a second job."""

from __future__ import annotations

import time

import docker
import pytest

from tests.conftest import job_containers, standbys, wait_for_ready_standby, wait_for_standby

#: no timing asserted, nothing done to the engine that another file would see (scripts/test.sh)
pytestmark = pytest.mark.concurrent

PROBE = """
import json, os, sys
out = os.environ["KCORAL_OUTPUT_DIR"]
seen = {
    "argv": sys.argv, "cwd": os.getcwd(), "uid": os.getuid(), "files": sorted(os.listdir(".")),
    "foo": os.environ.get("FOO"), "stdin": os.read(0, 10).decode(), "tmp": sorted(os.listdir("/tmp")),
    "mounts": sorted(line.split()[4] for line in open("/proc/self/mountinfo")),
    "env": sorted(os.environ), "pid": os.getpid(),
}
open("/tmp/left-by-an-earlier-job", "w").write("x")
with open(os.path.join(out, "seen.json"), "w") as f:
    json.dump(seen, f)
print("done")
"""


def _seen(server, job_id: str) -> dict:
    return server.http.get(f"/v1/jobs/{job_id}/outputs/seen.json").json()


@pytest.fixture
def both(server_factory):
    """A server with standbys and one without, on the same engine."""
    return server_factory(), server_factory(standby=False)


def test_a_job_in_a_standby_sees_what_it_would_see_in_a_container_of_its_own(both, docker_client) -> None:
    warm, cold = both
    files = {"probe.py": PROBE, "data/x.txt": "1"}
    first, _ = warm.run(files, ["probe.py", "a b"], env={"FOO": "bar"})  # starts the first standby
    standby_id = wait_for_ready_standby(warm, docker_client)
    job, log = warm.run(files, ["probe.py", "a b"], env={"FOO": "bar"})
    assert job["verdict"] == "ok" and log == "done\n", (job, log)
    reference, _ = cold.run(files, ["probe.py", "a b"], env={"FOO": "bar"})
    got, want = _seen(warm, job["id"]), _seen(cold, reference["id"])
    for key in ("argv", "cwd", "uid", "files", "foo", "stdin", "tmp", "env"):
        assert got[key] == want[key], key
    assert got["files"] == ["data", "probe.py"] and got["stdin"] == "" and got["tmp"] == []
    assert [m for m in got["mounts"] if m.startswith("/job")] == [m for m in want["mounts"] if m.startswith("/job")]
    assert job["times"]["phases"]["start"] < reference["times"]["phases"]["start"]
    with pytest.raises(docker.errors.NotFound):  # the standby was the job's container, and went with it
        docker_client.containers.get(standby_id)
    # the job's folders are back in its own place: outputs collected, input kept for a rerun
    assert [o["path"] for o in job["outputs"]] == ["seen.json"]
    assert sorted(p.name for p in warm.services.store.paths(job["id"]).input.iterdir()) == ["data", "probe.py"]
    assert first["verdict"] == "ok"


def test_every_job_gets_a_fresh_container(server, docker_client) -> None:
    files = {"probe.py": PROBE}
    pids, containers = [], set()
    for _ in range(3):
        if pids:
            wait_for_standby(docker_client, server.settings.instance)
        job, _ = server.run(files, ["probe.py"])
        seen = _seen(server, job["id"])
        assert seen["tmp"] == [], "a file an earlier job left in /tmp"
        pids.append(seen["pid"])
        containers.add(job["id"])
    assert len(containers) == 3


def test_a_failing_hand_over_runs_the_job_in_a_container_of_its_own(server, docker_client) -> None:
    server.run({"m.py": "pass"}, ["m.py"])
    standby_id = wait_for_standby(docker_client, server.settings.instance)
    docker_client.containers.get(standby_id).remove(force=True)  # gone behind the server's back
    job, log = server.run({"m.py": "print('still ran')"}, ["m.py"])
    assert job["verdict"] == "ok" and log == "still ran\n", job["reason"]


def test_the_timeout_counts_from_the_hand_over_and_stop_removes_thestandbys(server_factory, docker_client) -> None:
    srv = server_factory()
    srv.run({"m.py": "pass"}, ["m.py"])
    wait_for_ready_standby(srv, docker_client)
    time.sleep(1.5)  # the standby waits longer than the job's whole timeout
    job, log = srv.run({"m.py": "import time; time.sleep(0.5); print('in time')"}, ["m.py"], timeout_s=1.2)
    assert job["verdict"] == "ok" and log == "in time\n", job
    wait_for_standby(docker_client, srv.settings.instance)
    srv.stop()
    assert standbys(docker_client, srv.settings.instance) == []
    left = srv.settings.data_dir / "standby"
    assert not left.exists() or not list(left.iterdir()), list(left.rglob("*"))


def test_the_first_job_after_a_start_runs_in_a_standby_made_at_the_start(server, docker_client) -> None:
    standby_id = wait_for_ready_standby(server, docker_client)  # before any job
    job, log = server.run({"m.py": "print('first')"}, ["m.py"])
    assert job["verdict"] == "ok" and log == "first\n"
    # the job ran in it: it goes once the job's result is kept (off the job's path, so it may still be
    # there as the result is read); a standby the job had not taken would wait on for the next job
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            docker_client.containers.get(standby_id)
        except docker.errors.NotFound:
            return
        time.sleep(0.05)
    raise AssertionError("the standby made at the start is still there after the first job")


def test_a_server_without_standbys_starts_none(server_factory, docker_client) -> None:
    srv = server_factory(standby=False)
    job, _ = srv.run({"m.py": "pass"}, ["m.py"])
    assert job["verdict"] == "ok"
    time.sleep(0.5)
    assert standbys(docker_client, srv.settings.instance) == []


def test_a_jobs_container_goes_after_its_result_and_before_its_slot_is_free(server, docker_client) -> None:
    """The container of a job that exited is removed once the result is kept (off the job's critical
    path), but before its lease takes another job: a free slot never has a job's container left."""
    for _ in range(3):
        job, log = server.run({"m.py": "print('done')"}, ["m.py"])
        assert job["verdict"] == "ok" and log == "done\n"
        deadline = time.monotonic() + 20
        while job["slot"] not in server.http.get("/v1/health").json()["leases"]["free"]:
            assert time.monotonic() < deadline, "the slot was not freed"
            time.sleep(0.01)
        assert job_containers(docker_client, job["id"]) == []
