"""Connection exhaustion: attacker connections that never finish a request's head (or, with --slow-body,
its body) against a real client's latency (runner.connections).

    python bench/connections.py [--attackers 5000] [--requests 200] [--slow-body] [--unguarded] [--json FILE]

Runs the server in this process (its app and uvicorn configuration as ``kcoral serve`` builds them, on a
loopback port, a temporary data dir, CPU slots), raises this process's open-file limit to its hard limit,
then opens --attackers connections that each send ``GET /v1/jobs HTTP/1.1``, ``Host: x`` and stop (with
--slow-body: a whole ``POST /v1/jobs`` head saying 1000 bytes of body, one byte of it, and stop), as
fast as it can, while a real client (a new connection per request, as a health check's would be) asks
``GET /v1/health`` --requests times. --unguarded runs the same with limits so high they never bite and
head and body timeouts of a day: the server without runner.connections' rules, the "before".

Reported: attacker connections the server still held at the end (its guard's count, or the file
descriptors of the process less the attacker's own), how many it evicted, timed out (a head, a body too
slow) or refused, the client's answers (200s, failures) and its p50/p99 latency, and the process's open
descriptors.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import uvicorn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kcoral.runner.app import create_app, server_config  # noqa: E402
from kcoral.runner.limits import ConnectionLimits  # noqa: E402
from kcoral.runner.settings import Settings  # noqa: E402

HEAD = b"GET /v1/jobs HTTP/1.1\r\nHost: x\r\n"
SLOW_BODY = b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--attackers", type=int, default=5000)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--slow-body", action="store_true")
    parser.add_argument("--unguarded", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    day, many = 86400.0, 10**9
    never = ConnectionLimits(total=many, per_client=many, head_timeout_s=day, body_timeout_s=day, grace_s=day)
    limits = never if args.unguarded else None
    opening = SLOW_BODY if args.slow_body else HEAD
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(data_dir=Path(tmp), port=free_port(), gpus="none", cpu_slots=1, standby=False)
        if limits is not None:
            settings = replace(settings, connections=limits)
        app = create_app(settings)
        config = server_config(app, settings.host, settings.port, log_level="error")
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.05)
        url = f"http://{settings.host}:{settings.port}"
        socks: list[socket.socket] = []
        failures: list[str] = []
        latencies: list[float] = []
        stop = threading.Event()

        def attack() -> None:
            while len(socks) < args.attackers and not stop.is_set():
                try:
                    s = socket.create_connection((settings.host, settings.port), timeout=5)
                    s.sendall(opening)
                    socks.append(s)
                except OSError as exc:
                    failures.append(f"attacker: {type(exc).__name__}")
                    time.sleep(0.01)

        attacker = threading.Thread(target=attack, daemon=True)
        began = time.monotonic()
        attacker.start()
        for _ in range(args.requests):
            t = time.perf_counter()
            try:
                r = httpx.get(url + "/v1/health", timeout=10)
                if r.status_code != 200:
                    failures.append(f"health {r.status_code}")
                else:
                    latencies.append((time.perf_counter() - t) * 1000)
            except httpx.HTTPError as exc:
                failures.append(f"health {type(exc).__name__}")
            time.sleep(0.02)
        stop.set()
        attacker.join(30)
        guard = getattr(config.http_protocol_class, "guard", None)
        fds = len(os.listdir("/proc/self/fd"))
        held = sum(1 for s in socks if _open(s))
        result: dict[str, Any] = {
            "unguarded": args.unguarded,
            "attack": "slow body" if args.slow_body else "head",
            "attackers_opened": len(socks),
            "attackers_still_open": held,
            "server_connections": len(guard.open) if guard is not None else None,
            "evicted": guard.evicted if guard is not None else None,
            "timed_out": guard.timed_out if guard is not None else None,
            "slow_bodies": getattr(guard, "slow_bodies", None),
            "refused": guard.refused if guard is not None else None,
            "health_ok": len(latencies),
            "health_failed": len([f for f in failures if f.startswith("health")]),
            "failures": dict(Counter(failures)),
            "health_p50_ms": round(statistics.median(latencies), 2) if latencies else None,
            "health_p99_ms": round(sorted(latencies)[int(0.99 * (len(latencies) - 1))], 2) if latencies else None,
            "process_fds": fds,
            "nofile": hard,
            "seconds": round(time.monotonic() - began, 1),
        }
        for s in socks:
            s.close()
        server.should_exit = True
        thread.join(10)
    print(json.dumps(result, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")


def _open(s: socket.socket) -> bool:
    """Whether the server still holds this attacker connection (no EOF or reset seen after what it sent:
    a refusal's 503, a slow body's 408)."""
    s.setblocking(False)
    try:
        while s.recv(4096):
            pass
        return False
    except BlockingIOError:
        return True
    except OSError:
        return False


if __name__ == "__main__":
    main()
