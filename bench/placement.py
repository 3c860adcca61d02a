"""What placing jobs on a Ray cluster's hosts costs (issue 13: at most 50 ms added per job), and how
many jobs per second a cluster of 2 and of 3 hosts runs.

    python bench/placement.py [--runs 10] [--jobs 24] [--json FILE]

The same trivial job (``python3 -c pass`` in the CPU job image) end to end over HTTP: created, its
(empty) input uploaded, then its view asked every 10 ms until it has finished. First against a single
server (``kcoral serve``, one CPU slot, the local backend), then against a front end (``kcoral serve
--ray``) with one host (an agent with one CPU slot), one job at a time: the medians' difference is
the Ray backend's overhead. Then ``--jobs`` jobs submitted at once to the front end with 2 hosts and
with 3 (one slot each): jobs per second from the first submission to the last finish. The Ray nodes
all run on this machine (tests.cluster.raycluster); on a 2-core machine the hosts share its cores.
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import tarfile
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.cluster.raycluster import RayCluster  # noqa: E402
from tests.serverproc import ServerProcess  # noqa: E402

IMAGE = "kcoral-job:cpu"


def _empty_tar() -> bytes:
    buf = io.BytesIO()
    tarfile.open(fileobj=buf, mode="w").close()
    return buf.getvalue()


EMPTY_TAR = _empty_tar()


def one_job(http: httpx.Client, timeout: float = 120) -> float:
    """Seconds from the job's creation to its finished view."""
    began = time.perf_counter()
    r = http.post("/v1/jobs", json={"argv": ["-c", "pass"], "timeout_s": 60})
    r.raise_for_status()
    job_id = r.json()["id"]
    http.put(f"/v1/jobs/{job_id}/input", content=EMPTY_TAR).raise_for_status()
    deadline = time.monotonic() + timeout
    while True:
        view = http.get(f"/v1/jobs/{job_id}").json()
        if view["state"] == "finished":
            if view["verdict"] != "ok":
                raise RuntimeError(f"job {job_id}: {view['verdict']}: {view['reason']}")
            return time.perf_counter() - began
        if time.monotonic() > deadline:
            raise RuntimeError(f"job {job_id} did not finish")
        time.sleep(0.01)


def sequential(url: str, runs: int) -> list[float]:
    with httpx.Client(base_url=url, timeout=60) as http:
        one_job(http)  # the first: a standby to make, an image to look up
        return [one_job(http) for _ in range(runs)]


def burst(url: str, jobs: int) -> dict[str, float]:
    """``jobs`` jobs at once; jobs per second from the first submission to the last finish."""
    began = time.perf_counter()
    with httpx.Client(base_url=url, timeout=120) as http, ThreadPoolExecutor(8) as pool:
        took = list(pool.map(lambda _: one_job(http, 600), range(jobs)))
    wall = time.perf_counter() - began
    return {"jobs": jobs, "wall_s": round(wall, 3), "jobs_per_s": round(jobs / wall, 3), "median_ms": _ms(took)}


def _ms(values: list[float]) -> float:
    return round(statistics.median(values) * 1e3, 1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--jobs", type=int, default=24)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    out: dict[str, Any] = {"runs": args.runs}

    with tempfile.TemporaryDirectory(prefix="kcoral-placement-") as tmp:
        local = ServerProcess(Path(tmp) / "local", IMAGE, 1).start()
        try:
            out["local_s"] = sequential(local.url, args.runs)
            out["local_burst"] = burst(local.url, args.jobs)
        finally:
            local.kill()
            local.remove_containers()

    cluster = RayCluster(IMAGE)
    try:
        cluster.start_node("head", head=True)
        for n in (1, 2, 3):
            cluster.start_node(f"n{n}")
        cluster.start_agent("host1", "n1")
        front = cluster.start_front()
        _wait_for_hosts(front.url, 1)
        out["ray_s"] = sequential(front.url, args.runs)
        cluster.start_agent("host2", "n2")
        _wait_for_hosts(front.url, 2)
        out["ray_burst_2_hosts"] = burst(front.url, args.jobs)
        cluster.start_agent("host3", "n3")
        _wait_for_hosts(front.url, 3)
        out["ray_burst_3_hosts"] = burst(front.url, args.jobs)
    finally:
        cluster.stop()

    out["local_median_ms"], out["ray_median_ms"] = _ms(out["local_s"]), _ms(out["ray_s"])
    out["ray_added_ms"] = round(out["ray_median_ms"] - out["local_median_ms"], 1)
    print(
        f"one job at a time: local {out['local_median_ms']} ms, Ray backend {out['ray_median_ms']} ms "
        f"(added {out['ray_added_ms']} ms, median of {args.runs})"
    )
    print(f"{args.jobs} jobs at once: local (1 slot) {out['local_burst']['jobs_per_s']} jobs/s, "
          f"Ray 2 hosts {out['ray_burst_2_hosts']['jobs_per_s']} jobs/s, "
          f"3 hosts {out['ray_burst_3_hosts']['jobs_per_s']} jobs/s")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


def _wait_for_hosts(url: str, count: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while len(httpx.get(f"{url}/v1/health", timeout=10).json()["leases"].get("hosts", {})) != count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the front end does not see {count} hosts")
        time.sleep(0.2)


if __name__ == "__main__":
    sys.exit(main())
