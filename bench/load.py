"""Load: concurrent clients submit many short jobs to one server; every job must run exactly once.

    python bench/load.py [--jobs 500] [--clients 20] [--slots 4] [--image kcoral-job:cpu] [--bare-runs 5]
                         [--json FILE]

Starts ``kcoral serve`` (tests.serverproc.ServerProcess, --slots CPU slots) on loopback with a
temporary data dir. First the reference: a bare ``docker run --rm IMAGE python3 -c pass`` (the docker
CLI, as a person would), --bare-runs times after one warm-up, on the idle machine. Then --clients
threads, each with its own cli.client.KcoralClient, share --jobs jobs of ``python -c pass``: submit
(create + upload, as bench/overhead.py does), follow the log to its end, read the final status. A
submission refused with 429 (the token's cap of waiting jobs) is tried again shortly; the time from
the first try to the final status is the job's submit-to-done latency.

Reported: the exactly-once check, where three records must agree on one container per job: the ids
the clients were given (each once), the store's finished jobs (GET /v1/jobs?limit=500: each of them
there once, finished, verdict ok, and no other job), and the Docker engine's container ``create`` and
``start`` events carrying this server's instance label (docker-py ``events(since=, until=,
decode=True, filters=)``, streamed from before the first submission until every job's two events came:
one of each per job id, none for another id); p50/p99 submit-to-done latency, jobs/s, the server's
RSS (VmRSS sampled every 0.2 s, its peak, and VmHWM at the end), next to the bare docker figures.

Exit status: 1 when the exactly-once check fails or a job did not end ``ok``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import docker
import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kcoral.cli.client import KcoralClient  # noqa: E402
from kcoral.cli.tarball import build_tarball  # noqa: E402
from kcoral.protocol.errors import ServerBusy  # noqa: E402
from kcoral.protocol.models import PythonSpec  # noqa: E402
from kcoral.runner.sandbox import LABEL_INSTANCE, LABEL_JOB  # noqa: E402
from kcoral.runner.settings import Settings  # noqa: E402
from tests.serverproc import ServerProcess  # noqa: E402

COMMAND = ["python3", "-c", "pass"]
#: how long a client waits before it submits again after a 429 (the server's Retry-After is 10 s:
#: honouring it would measure the back-off, not the server; the count of 429s is reported)
RETRY_AFTER_429_S = 0.2


def bare_run(image: str) -> float:
    t0 = time.perf_counter()
    subprocess.run(["docker", "run", "--rm", image, *COMMAND], check=True, capture_output=True)
    return time.perf_counter() - t0


def percentile(samples: list[float], q: float) -> float:
    """The q-quantile (0..1) by linear interpolation between the closest ranks."""
    ordered = sorted(samples)
    if len(ordered) == 1:
        return ordered[0]
    pos = q * (len(ordered) - 1)
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


class MemorySampler(threading.Thread):
    """VmRSS of ``pid`` every ``period`` seconds, until stopped; VmHWM read at the end."""

    def __init__(self, pid: int, period: float = 0.2) -> None:
        super().__init__(daemon=True)
        self.pid, self.period = pid, period
        self.samples_kib: list[int] = []
        self.hwm_kib = 0
        self._stop_event = threading.Event()

    def status(self) -> dict[str, int]:
        fields = {}
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                fields[name] = int(value.split()[0])
        return fields

    def run(self) -> None:
        while not self._stop_event.is_set():
            self.samples_kib.append(self.status()["VmRSS"])
            self._stop_event.wait(self.period)

    def stop(self) -> None:
        self._stop_event.set()
        self.join(5)
        status = self.status()
        self.samples_kib.append(status["VmRSS"])
        self.hwm_kib = status["VmHWM"]


class Load:
    """The clients: they take job numbers from one counter until ``jobs`` are handed out."""

    def __init__(self, url: str, tar_path: Path, jobs: int) -> None:
        self.url, self.tar_path, self.jobs = url, tar_path, jobs
        self._next = 0
        self._lock = threading.Lock()
        self.ids: list[str] = []
        self.latencies: list[float] = []
        self.verdicts: Counter[str] = Counter()
        self.refused_429 = 0
        self.errors: list[str] = []

    def _take(self) -> bool:
        with self._lock:
            if self._next >= self.jobs:
                return False
            self._next += 1
            return True

    def client(self) -> None:
        try:
            with KcoralClient(self.url, timeout=120) as client:
                while self._take():
                    self.one(client)
        except Exception as exc:  # reported, and fails the run
            with self._lock:
                self.errors.append(f"{type(exc).__name__}: {exc}")

    def one(self, client: KcoralClient) -> None:
        t0 = time.perf_counter()
        while True:
            try:
                job = client.submit(PythonSpec(argv=COMMAND[1:], timeout_s=60), self.tar_path)
                break
            except ServerBusy as exc:
                if exc.status != 429:
                    raise
                with self._lock:
                    self.refused_429 += 1
                time.sleep(RETRY_AFTER_429_S)
        with self._lock:
            self.ids.append(job.id)
        for _ in client.follow_log(job.id):
            pass
        final = client.status(job.id)
        elapsed = time.perf_counter() - t0
        with self._lock:
            self.latencies.append(elapsed)
            self.verdicts[str(final.verdict)] += 1


def store_jobs(url: str, ids: list[str]) -> list[dict[str, Any]]:
    """The store's jobs: GET /v1/jobs?limit=500 (or, past 500 jobs, each id's own GET /v1/jobs/{id})."""
    with httpx.Client(base_url=url, timeout=60) as http:
        if len(ids) <= 500:
            return list(http.get("/v1/jobs", params={"limit": 500}).raise_for_status().json())
        return [http.get(f"/v1/jobs/{job_id}").raise_for_status().json() for job_id in ids]


class ContainerEvents(threading.Thread):
    """The engine's container create and start events of this server instance, streamed while the load
    runs: job id -> action counts. (Asked for afterwards, ``since`` would find only the engine's last
    256 events, of all kinds: a few dozen jobs' worth.)"""

    def __init__(self, instance: str, longest: float) -> None:
        super().__init__(daemon=True)
        self.client = docker.from_env()
        self.since = time.time() - 1
        self.stream = self.client.events(
            since=int(self.since),
            until=int(self.since + longest),
            decode=True,
            filters={"type": "container", "event": ["create", "start"], "label": f"{LABEL_INSTANCE}={instance}"},
        )
        self.per_job: dict[str, Counter[str]] = {}
        self.seen = 0

    def run(self) -> None:
        try:
            for event in self.stream:
                job_id = event.get("Actor", {}).get("Attributes", {}).get(LABEL_JOB, "?")
                self.per_job.setdefault(job_id, Counter())[event.get("Action") or event.get("status", "?")] += 1
                self.seen += 1
        except Exception:  # the stream closed under it, by stop()
            pass

    def stop(self, expected: int, timeout: float = 10) -> dict[str, Counter[str]]:
        """Wait until ``expected`` events arrived (or ``timeout``), then close the stream."""
        deadline = time.monotonic() + timeout
        while self.seen < expected and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)  # one more event than expected would be a container too many: give it a moment
        self.stream.close()
        self.join(5)
        self.client.close()
        return self.per_job


def exactly_once(ids: list[str], jobs: int, stored: list[dict[str, Any]], events: dict[str, Counter[str]]) -> list[str]:
    """What breaks "each job ran exactly once, in one container" (empty: nothing)."""
    problems = []
    given = Counter(ids)
    if len(ids) != jobs or any(n != 1 for n in given.values()):
        problems.append(f"clients: {len(ids)} ids for {jobs} jobs, {sum(n > 1 for n in given.values())} given twice")
    store = Counter(j["id"] for j in stored)
    finished = {j["id"] for j in stored if j["state"] == "finished"}
    if set(store) != set(given) or any(n != 1 for n in store.values()):
        problems.append(
            f"store: {len(store)} jobs; {len(set(given) - set(store))} of the clients' missing, "
            f"{len(set(store) - set(given))} not the clients'"
        )
    if finished != set(given):
        problems.append(f"store: {len(set(given) - finished)} of the clients' jobs not finished")
    not_ok = [j["id"] for j in stored if j.get("verdict") != "ok"]
    if not_ok:
        problems.append(f"store: {len(not_ok)} jobs did not end ok, e.g. {not_ok[:3]}")
    wrong = {job_id: dict(c) for job_id, c in events.items() if c != Counter(create=1, start=1)}
    missing = set(given) - set(events)
    strangers = set(events) - set(given)
    if wrong or missing or strangers:
        problems.append(
            f"docker events: {len(missing)} jobs without a container, {len(strangers)} containers of no job of "
            f"the clients, not one create and one start: {dict(list(wrong.items())[:3])}"
        )
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--slots", type=int, default=4, help="server CPU slots (concurrent jobs)")
    parser.add_argument("--image", default="kcoral-job:cpu")
    parser.add_argument("--bare-runs", type=int, default=5, help="bare docker runs for the reference (median)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()

    bare_run(args.image)  # warm-up: the image in the page cache, as it is for the server's jobs
    bare = [bare_run(args.image) for _ in range(args.bare_runs)]

    with tempfile.TemporaryDirectory(prefix="kcoral-load-") as tmp:
        send = Path(tmp) / "send"
        send.mkdir()
        tarball = build_tarball(send, tmp)
        data_dir = Path(tmp) / "data"
        instance = Settings(data_dir=data_dir).instance
        server = ServerProcess(data_dir, args.image, args.slots).start()
        assert server.proc is not None
        memory = MemorySampler(server.proc.pid)
        try:
            rss_start_kib = memory.status()["VmRSS"]
            memory.start()
            load = Load(server.url, tarball.path, args.jobs)
            threads = [threading.Thread(target=load.client) for _ in range(args.clients)]
            watch = ContainerEvents(instance, longest=24 * 3600)
            watch.start()
            t0 = time.perf_counter()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            wall = time.perf_counter() - t0
            memory.stop()
            stored = store_jobs(server.url, load.ids)
            events = watch.stop(expected=2 * len(load.ids))
        finally:
            server.stop()
    problems = exactly_once(load.ids, args.jobs, stored, events) + load.errors

    done = len(load.latencies)
    result = {
        "image": args.image,
        "jobs": args.jobs,
        "clients": args.clients,
        "slots": args.slots,
        "jobs_done": done,
        "wall_s": wall,
        "jobs_per_s": done / wall,
        "latency_p50_s": percentile(load.latencies, 0.50) if done else None,
        "latency_p99_s": percentile(load.latencies, 0.99) if done else None,
        "latency_max_s": max(load.latencies) if done else None,
        "refused_429": load.refused_429,
        "verdicts": dict(load.verdicts),
        "bare_median_s": statistics.median(bare),
        "bare_runs_s": bare,
        "bare_serial_jobs_per_s": 1 / statistics.median(bare),
        "rss_start_mib": rss_start_kib / 1024,
        "rss_peak_sampled_mib": max(memory.samples_kib) / 1024,
        "rss_end_mib": memory.samples_kib[-1] / 1024,
        "vmhwm_end_mib": memory.hwm_kib / 1024,
        "rss_samples": len(memory.samples_kib),
        "container_events": {
            "jobs": len(events),
            "create": sum(c["create"] for c in events.values()),
            "start": sum(c["start"] for c in events.values()),
        },  # fmt: skip
        "exactly_once": not problems,
        "problems": problems,
    }
    ev = result["container_events"]
    print(f"{args.jobs} jobs of `python -c pass`, {args.clients} clients, {args.slots} CPU slots, image {args.image}")
    print(f"exactly once:      {'yes' if not problems else 'NO'}  (client ids {len(load.ids)}, distinct "
          f"{len(set(load.ids))}; store finished {sum(j['state'] == 'finished' for j in stored)}; docker events: "
          f"{ev['jobs']} jobs, {ev['create']} create, {ev['start']} start)")  # fmt: skip
    for problem in problems:
        print(f"  - {problem}")
    print(f"verdicts:          {dict(load.verdicts)}   (429s retried: {load.refused_429})")
    if done:
        print(f"submit-to-done:    p50 {result['latency_p50_s']:.3f} s   p99 {result['latency_p99_s']:.3f} s   "
              f"max {result['latency_max_s']:.3f} s")  # fmt: skip
    print(f"throughput:        {result['jobs_per_s']:.2f} jobs/s ({done} jobs in {wall:.1f} s)")
    print(f"bare docker run:   median {result['bare_median_s']:.3f} s of {args.bare_runs} "
          f"(= {result['bare_serial_jobs_per_s']:.2f} jobs/s one after another)")  # fmt: skip
    print(f"server RSS:        start {result['rss_start_mib']:.1f} MiB, peak sampled "
          f"{result['rss_peak_sampled_mib']:.1f} MiB, end {result['rss_end_mib']:.1f} MiB, "
          f"VmHWM {result['vmhwm_end_mib']:.1f} MiB ({len(memory.samples_kib)} samples)")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 1 if problems or set(load.verdicts) - {"ok"} else 0


if __name__ == "__main__":
    sys.exit(main())
