"""Several hosts behind one front end, on a real Ray cluster started here (tests.cluster.raycluster):
a head, two worker nodes whose CPU slots stand in for GPU types fakeA and fakeB (Ray custom
resources), an agent on each, a front end; the jobs run in the real Docker engine.

The tests run in order on one cluster; the later ones kill parts of it (the front end, an agent, a
whole node) and check that no job is lost or run twice and that no container is left."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.attacks.judging import CANDIDATES
from tests.cluster.raycluster import RayCluster
from tests.conftest import make_tar

#: slow (a three-node Ray cluster, ~70 s): scripts/test-nightly.sh runs it, not CI
pytestmark = [pytest.mark.cluster, pytest.mark.nightly]

SLEEPER = "import os, time\nprint('start', flush=True)\ntime.sleep(float(os.environ.get('NAP', '4')))\nprint('end')\n"


@pytest.fixture(scope="module")
def cluster(job_image: str) -> Iterator[RayCluster]:
    c = RayCluster(job_image)
    try:
        c.start_node("head", head=True)
        # one after the other: two worker nodes started side by side here, one timed out registering
        # with the head ("Failed to get node info: RPC error: Deadline Exceeded")
        c.start_node("n1", resources={"kcoral_gpu_type_fakeA": 1})
        c.start_node("n2", resources={"kcoral_gpu_type_fakeB": 1})
        c.start_agent("hostA", "n1")
        c.start_agent("hostB", "n2")
        c.start_front()
        wait_for_hosts(c, {"hostA", "hostB"})
        yield c
    finally:
        c.stop()


def front(c: RayCluster) -> httpx.Client:
    assert c.front is not None
    return httpx.Client(base_url=c.front.url, timeout=60)


def wait_for_hosts(c: RayCluster, hosts: set[str], timeout: float = 60) -> dict[str, Any]:
    """The front end's view of the hosts once exactly ``hosts`` are in it."""
    deadline = time.monotonic() + timeout
    with front(c) as http:
        while True:
            leases = http.get("/v1/health").json()["leases"]
            if set(leases.get("hosts", {})) == hosts:
                return leases["hosts"]
            assert time.monotonic() < deadline, f"hosts {sorted(leases.get('hosts', {}))}, not {sorted(hosts)}"
            time.sleep(0.2)


def submit(http: httpx.Client, files: dict[str, str], argv: list[str], **spec: Any) -> str:
    r = http.post("/v1/jobs", json={"argv": argv, "timeout_s": 120, **spec})
    assert r.status_code == 201, r.text
    job_id: str = r.json()["id"]
    r = http.put(f"/v1/jobs/{job_id}/input", content=make_tar(files))
    assert r.status_code == 200, r.text
    return job_id


def wait(http: httpx.Client, job_id: str, state: str = "finished", timeout: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        try:
            job: dict[str, Any] = http.get(f"/v1/jobs/{job_id}").json()
        except httpx.TransportError:  # a front end being restarted
            job = {"state": "unknown"}
        if job["state"] == state:
            return job
        assert time.monotonic() < deadline, f"job {job_id} is {job['state']}, not {state}"
        time.sleep(0.1)


def wait_started(http: httpx.Client, job_id: str, timeout: float = 60) -> None:
    """Until the job's container has printed its first line (the job is "running" from its claim)."""
    deadline = time.monotonic() + timeout
    while not http.get(f"/v1/jobs/{job_id}/log").text.startswith("start"):
        assert time.monotonic() < deadline, f"job {job_id} did not start"
        time.sleep(0.1)


def test_jobs_go_to_a_host_of_their_type_and_come_back_whole(cluster: RayCluster) -> None:
    hosts = wait_for_hosts(cluster, {"hostA", "hostB"})
    assert hosts["hostA"]["types"] == {"cpu0": "fakeA"} and hosts["hostB"]["types"] == {"cpu0": "fakeB"}
    assert hosts["hostA"]["images"] == hosts["hostB"]["images"] != {}
    script = (
        "import os, sys\nprint('out')\nprint('err', file=sys.stderr)\n"
        "open(os.path.join(os.environ['KCORAL_OUTPUT_DIR'], 'o.txt'), 'w').write('made on a host')\n"
    )
    with front(cluster) as http:
        for kind, host in (("fakeA", "hostA"), ("FAKEB", "hostB")):
            job = wait(http, submit(http, {"m.py": script}, ["m.py"], gpu_type=kind))
            assert job["verdict"] == "ok" and job["exit_code"] == 0, job
            assert job["slot"] == f"{host}/cpu0", job
            assert job["image"]["digest"] == hosts[host]["images"][cluster.image]
            assert http.get(f"/v1/jobs/{job['id']}/log").text in ("out\nerr\n", "err\nout\n")
            assert http.get(f"/v1/jobs/{job['id']}/outputs/o.txt").text == "made on a host"
        r = http.post("/v1/jobs", json={"argv": ["m.py"], "gpu_type": "H100"})
        assert r.status_code == 400 and "fakeA" in r.json()["message"], r.text
        # two jobs for any type at once: one on each host, side by side
        ids = [submit(http, {"m.py": SLEEPER}, ["m.py"], env={"NAP": "3"}) for _ in range(2)]
        running = [wait(http, i, "running") for i in ids]
        assert {j["slot"] for j in running} == {"hostA/cpu0", "hostB/cpu0"}
        assert all(wait(http, i)["verdict"] == "ok" for i in ids)
    # the command line routes by type too
    assert cluster.front is not None
    cli = [sys.executable, "-m", "kcoral", "python", "--remote", cluster.front.url, "--gpu-type", "fakeB"]
    done = subprocess.run([*cli, "--json", "-c", "print('by type')"], capture_output=True, text=True, timeout=120)
    doc = json.loads(done.stdout)
    assert done.returncode == 0 and doc["slot"] == "hostB/cpu0" and doc["log"] == "by type\n", done


def test_an_evaluation_runs_on_a_host_and_kcoral_gpus_shows_every_host(cluster: RayCluster) -> None:
    source = (CANDIDATES / "honest" / "solution.py").read_bytes()
    with front(cluster) as http:
        r = http.post("/v1/jobs", json={"kind": "eval", "task": "demo/softmax", "timeout_s": 300, "gpu_type": "fakeB"})
        assert r.status_code == 201, r.text
        job_id = r.json()["id"]
        assert http.put(f"/v1/jobs/{job_id}/input", content=make_tar({"solution.py": source})).status_code == 200
        job = wait(http, job_id, timeout=300)
        # three Ray nodes on a 2-core host keep its cores busy: a timing that the host's work disturbed,
        # or whose core it shared, is inconclusive by design (no score; never a failure or a gain), the
        # first evaluation's as its rerun's (stop 53's nightly run: the first one's)
        assert job["verdict"] in ("ok", "inconclusive") and job["slot"] == "hostB/cpu0", job
        receipt = http.get(f"/v1/jobs/{job_id}/outputs/receipt.json").json()
        assert receipt["image"] == job["image"]["digest"] and receipt["task_version"]
        rerun = wait(http, http.post(f"/v1/jobs/{job_id}/rerun").json()["id"], timeout=300)
        assert rerun["verdict"] in ("ok", "inconclusive") and rerun["slot"] == "hostB/cpu0", rerun
        assert rerun["image"]["digest"] == job["image"]["digest"], (rerun, job)
    assert cluster.front is not None
    cli = [sys.executable, "-m", "kcoral", "gpus", "--remote", cluster.front.url]
    rows = json.loads(subprocess.run([*cli, "--json"], capture_output=True, check=True).stdout)["cluster_slots"]
    assert {(r["host"], r["slot"], r["type"]) for r in rows} == {("hostA", "cpu0", "fakeA"), ("hostB", "cpu0", "fakeB")}
    text = subprocess.run(cli, capture_output=True, text=True, check=True).stdout
    assert "hostA" in text and "fakeB" in text
    metrics = httpx.get(f"{cluster.front.url}/metrics").text  # every host's slots
    assert 'kcoral_slot_busy{slot="hostA/cpu0"}' in metrics and 'kcoral_slot_drained{slot="hostB/cpu0"} 0.0' in metrics


def test_a_cancelled_job_stops_on_its_host(cluster: RayCluster) -> None:
    with front(cluster) as http:
        job_id = submit(http, {"m.py": SLEEPER}, ["m.py"], env={"NAP": "60"}, gpu_type="fakeA")
        wait(http, job_id, "running")
        assert http.post(f"/v1/jobs/{job_id}/cancel").status_code == 200
        job = wait(http, job_id, timeout=30)
        assert job["verdict"] == "cancelled", job
    deadline = time.monotonic() + 10
    while cluster.agents["hostA"].containers():
        assert time.monotonic() < deadline, "the cancelled job's container is still there"
        time.sleep(0.2)


def test_a_killed_front_end_finds_its_jobs_again_and_runs_the_queue_once(cluster: RayCluster) -> None:
    assert cluster.front is not None
    with front(cluster) as http:
        running = submit(http, {"m.py": SLEEPER}, ["m.py"], env={"NAP": "6"}, gpu_type="fakeA")
        wait_started(http, running)
        queued = submit(http, {"m.py": SLEEPER}, ["m.py"], env={"NAP": "1"}, gpu_type="fakeA")
        assert http.get(f"/v1/jobs/{queued}").json()["state"] == "queued"
    cluster.front.kill()
    cluster.front.start(timeout=60)
    with front(cluster) as http:
        first, second = wait(http, running), wait(http, queued)
        assert first["verdict"] == "ok" and second["verdict"] == "ok", (first, second)
        # each ran once: one start and one end in each log, the second after the first
        assert http.get(f"/v1/jobs/{running}/log").text == "start\nend\n"
        assert http.get(f"/v1/jobs/{queued}/log").text == "start\nend\n"
        assert second["times"]["started"] >= first["times"]["finished"] - 1.0


def test_a_front_end_stopped_by_sigterm_leaves_its_hosts_jobs_running(cluster: RayCluster) -> None:
    """Unlike a single server (which interrupts its jobs after the grace period), a cluster's front
    end leaves its jobs to their hosts: the next start follows them to their end."""
    assert cluster.front is not None
    with front(cluster) as http:
        job_id = submit(http, {"m.py": SLEEPER}, ["m.py"], env={"NAP": "5"}, gpu_type="fakeB")
        wait_started(http, job_id)
    began = time.monotonic()
    cluster.front.stop()
    # it left by itself (SIGTERM's own status after its shutdown: 15 under Ray's handler), not by the
    # SIGKILL that follows a stop that takes too long, and it did not wait for the job
    assert cluster.front.proc is not None and cluster.front.proc.returncode in (0, 15, -15)
    assert time.monotonic() - began < 15
    cluster.front.start(timeout=60)
    with front(cluster) as http:
        job = wait(http, job_id)
        assert job["verdict"] == "ok" and http.get(f"/v1/jobs/{job_id}/log").text == "start\nend\n", job


def test_a_draining_host_finishes_its_jobs_and_takes_no_new_ones(cluster: RayCluster) -> None:
    agent = cluster.agents["hostA"]
    with front(cluster) as http:
        running = submit(http, {"m.py": SLEEPER}, ["m.py"], env={"NAP": "4"}, gpu_type="fakeA")
        wait_started(http, running)
        stopping = threading.Thread(target=agent.stop)
        stopping.start()  # SIGTERM: drain
        deadline = time.monotonic() + 30
        while not http.get("/v1/health").json()["leases"]["hosts"]["hostA"]["draining"]:
            assert time.monotonic() < deadline, "the host does not drain"
            time.sleep(0.1)
        waiting = submit(http, {"m.py": "print('later')"}, ["m.py"], gpu_type="fakeA")
        assert wait(http, running)["verdict"] == "ok"
        stopping.join(60)
        assert agent.proc is not None and agent.proc.returncode == 0
        assert http.get(f"/v1/jobs/{waiting}").json()["state"] == "queued"
        wait_for_hosts(cluster, {"hostB"})
        cluster.start_agent("hostA", "n1")
        later = wait(http, waiting)
        assert later["verdict"] == "ok" and later["slot"] == "hostA/cpu0", later


def test_a_lost_agent_fails_its_job_by_name_and_the_queue_goes_elsewhere(cluster: RayCluster) -> None:
    agent = cluster.agents["hostA"]
    with front(cluster) as http:
        doomed = submit(http, {"m.py": SLEEPER}, ["m.py"], env={"NAP": "60"}, gpu_type="fakeA")
        wait_started(http, doomed)
        left = agent.containers()
        assert left
        cluster.kill_agent_actor("hostA")
        job = wait(http, doomed, timeout=60)
        assert job["verdict"] == "infrastructure_error" and "host hostA" in job["reason"], job
        wait_for_hosts(cluster, {"hostB"})
        elsewhere = wait(http, submit(http, {"m.py": "print('here')"}, ["m.py"]))
        assert elsewhere["verdict"] == "ok" and elsewhere["slot"] == "hostB/cpu0", elsewhere
        # the job's container outlived its agent; the host's next agent removes it
        assert set(left) <= set(agent.containers())
        agent.stop()
        cluster.start_agent("hostA", "n1")
        assert not set(left) & set(agent.containers(jobs_only=False))
        wait_for_hosts(cluster, {"hostA", "hostB"})


def test_a_lost_node_fails_its_job_and_leaves_nothing_once_it_is_back(cluster: RayCluster) -> None:
    agent = cluster.agents["hostB"]
    with front(cluster) as http:
        doomed = submit(http, {"m.py": SLEEPER}, ["m.py"], env={"NAP": "60"}, gpu_type="fakeB")
        wait_started(http, doomed)
        left = agent.containers()
        assert left
        cluster.nodes["n2"].kill()  # the raylet and every worker of the node: the agent with them
        job = wait(http, doomed, timeout=90)
        assert job["verdict"] == "infrastructure_error" and "host hostB" in job["reason"], job
        wait_for_hosts(cluster, {"hostA"}, timeout=60)
        assert set(left) <= set(agent.containers())  # Docker's containers do not die with a Ray node
        agent.stop()
        cluster.start_node("n2", resources={"kcoral_gpu_type_fakeB": 1})
        cluster.start_agent("hostB", "n2")
        assert not set(left) & set(agent.containers(jobs_only=False))
        wait_for_hosts(cluster, {"hostA", "hostB"})
        again = wait(http, submit(http, {"m.py": "print('back')"}, ["m.py"], gpu_type="fakeB"))
        assert again["verdict"] == "ok" and again["slot"] == "hostB/cpu0", again
