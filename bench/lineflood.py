"""Line floods: what a job printing as fast as it can costs the server, and how late its verdict comes.

    python bench/lineflood.py [--seconds 5] [--line-bytes 10] [--write-bytes 65536] [--log-mib 4096]
                              [--load 0] [--runs 1] [--json FILE]

Starts a server in its own process (this file with ``--serve``: the app and uvicorn configuration as
``kcoral serve`` builds them, one CPU slot, a temporary data dir, no GPUs, the job log cap raised to
--log-mib so that a fast job reaches its deadline before the cap), then submits two ``kcoral python``
jobs one after the other, each with ``timeout_s`` --seconds:

- ``short``: lines of --line-bytes bytes (newline included), written by ``os.write`` alternately to
  stdout and stderr, as fast as the job can;
- ``long``: blocks of --write-bytes bytes, the same way.

A first short flood of 1 s warms the image and the slot's standby. --load K runs K busy loops on
this machine while the timed jobs run (the server under load).

Before them, each round, a ``quiet`` job that only sleeps, with the same deadline: what the server spends
on any job of that length (its start, the watch loop, this bench's status polls every 0.2 s).

Reported per job: its verdict and exit code, the log bytes it kept, the verdict lag (the time from its
deadline, the job's start plus its timeout, to its verdict being recorded: ``times.finished``), the time
from the container's exit (as the server saw it) to the verdict, the server process's CPU seconds
(utime + stime of every thread, from /proc/PID/stat) from submission to verdict, per MiB of log kept, and
per MiB less the quiet job's, and the engine's (dockerd's) CPU seconds over the same time where its
process can be read.
"""

from __future__ import annotations

import argparse
import io
import json
import multiprocessing
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.serverproc import free_port  # noqa: E402

MiB = 1 << 20
TICK = os.sysconf("SC_CLK_TCK")
FLOOD = """import os
block = b"x" * ({size} - 1) + b"\\n"
while True:
    os.write(1, block)
    os.write(2, block)
"""
QUIET = "import time\ntime.sleep(3600)\n"


def serve(port: int, data_dir: Path, log_mib: int) -> None:
    """The server of this bench (``--serve``): ``kcoral serve``'s app with a job log cap of ``log_mib``."""
    from kcoral.runner.app import create_app, run_server
    from kcoral.runner.limits import Limits
    from kcoral.runner.logsetup import configure
    from kcoral.runner.settings import Settings

    settings = Settings(
        data_dir=data_dir, port=port, gpus="none", cpu_slots=1, limits=replace(Limits(), log_bytes=log_mib * MiB)
    )
    configure("warning", "text")
    run_server(create_app(settings), settings.host, port, "warning")


def cpu_seconds(pid: int) -> float:
    """utime + stime of the process (all its threads) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def dockerd_pid() -> int | None:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() == "dockerd":
                    return int(entry.name)
            except OSError:
                continue
    return None


def tarball(files: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def flood(http: httpx.Client, server_pid: int, size: int, seconds: float) -> dict[str, Any]:
    """One flood job of ``size``-byte writes (0: a quiet job) with a ``seconds`` deadline, until its verdict."""
    engine = dockerd_pid()
    engine_before = cpu_seconds(engine) if engine else None
    before = cpu_seconds(server_pid)
    r = http.post("/v1/jobs", json={"argv": ["m.py"], "timeout_s": seconds})
    r.raise_for_status()
    job_id = r.json()["id"]
    script = FLOOD.format(size=size) if size else QUIET
    http.put(f"/v1/jobs/{job_id}/input", content=tarball({"m.py": script})).raise_for_status()
    while (job := http.get(f"/v1/jobs/{job_id}").json())["state"] != "finished":
        time.sleep(0.2)
    cpu = cpu_seconds(server_pid) - before
    engine_cpu = cpu_seconds(engine) - engine_before if engine and engine_before is not None else None
    times = job["times"]
    mib = job["log_bytes"] / MiB
    exited = times["steps"][-1]["ended"] if times.get("steps") else None
    return {
        "write_bytes": size,
        "verdict": job["verdict"],
        "exit_code": job["exit_code"],
        "reason": job["reason"],
        "log_mib": round(mib, 3),
        "ingest_mib_s": round(mib / max(1e-9, (exited or times["finished"]) - times["started"]), 3),
        "verdict_lag_s": round(times["finished"] - (times["started"] + seconds), 3),
        "exit_to_verdict_s": round(times["finished"] - exited, 3) if exited else None,
        "server_cpu_s": round(cpu, 3),
        "server_cpu_s_per_mib": round(cpu / mib, 4) if mib else None,
        "dockerd_cpu_s": round(engine_cpu, 3) if engine_cpu is not None else None,
    }


def busy() -> None:
    while True:
        pass


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--line-bytes", type=int, default=10)
    parser.add_argument("--write-bytes", type=int, default=64 << 10)
    parser.add_argument("--log-mib", type=int, default=4096)
    parser.add_argument("--load", type=int, default=0)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--serve", nargs=2, metavar=("PORT", "DATA_DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(int(args.serve[0]), Path(args.serve[1]), args.log_mib)
        return
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        proc = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(port), tmp, "--log-mib", str(args.log_mib)],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        loads: list[multiprocessing.Process] = []
        try:
            http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60)
            deadline = time.monotonic() + 60
            while True:
                try:
                    if http.get("/v1/health").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise SystemExit("the server did not come up")
                time.sleep(0.1)
            flood(http, proc.pid, args.line_bytes, 1.0)  # a first job: the image and the standby warm
            loads = [multiprocessing.Process(target=busy, daemon=True) for _ in range(args.load)]
            for p in loads:
                p.start()
            results = []
            for _ in range(args.runs):
                quiet = flood(http, proc.pid, 0, args.seconds)
                print(json.dumps({"case": "quiet", **quiet}), flush=True)
                results.append({"case": "quiet", **quiet})
                for name, size in (("short", args.line_bytes), ("long", args.write_bytes)):
                    result = {"case": name, **flood(http, proc.pid, size, args.seconds)}
                    result["server_cpu_s_per_mib_less_quiet"] = (
                        round((result["server_cpu_s"] - quiet["server_cpu_s"]) / result["log_mib"], 4)
                        if result["log_mib"]
                        else None
                    )
                    print(json.dumps(result), flush=True)
                    results.append(result)
        finally:
            for p in loads:
                p.kill()
            proc.terminate()
            proc.wait(60)
    report = {
        "seconds": args.seconds,
        "load": args.load,
        "cores": os.cpu_count(),
        "loadavg_after": os.getloadavg()[0],
        "jobs": results,
    }
    print(json.dumps(report, indent=1))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
