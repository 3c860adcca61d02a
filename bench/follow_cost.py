"""What following a quiet job's log costs the server: its CPU while nobody follows, then while one client
follows the log (GET /v1/jobs/{id}/log?follow=true, as `kcoral python` and `kcoral eval` do).

    python3 bench/follow_cost.py [--seconds 8] [--image kcoral-job:cpu] [--json FILE]

A local server (one CPU slot) runs a `kcoral python` job that prints one line, then sleeps; the
server's CPU seconds (all its threads, /proc) are read over ``--seconds`` without a follower, then
with one. Every evaluation's client follows its job, and on a host whose cores are all slots (the
2-core VM) the server's wake-ups run on the cores an evaluation is timed on.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.artifacts import cpu_s  # noqa: E402
from kcoral.cli.client import KcoralClient  # noqa: E402
from kcoral.cli.tarball import build_tarball  # noqa: E402
from kcoral.protocol.models import PythonSpec  # noqa: E402
from tests.serverproc import ServerProcess  # noqa: E402

QUIET = "import time\nprint('started', flush=True)\ntime.sleep({sleep})\nprint('done', flush=True)\n"


def _follow(url: str, job_id: str, stop: threading.Event) -> None:
    """Follow the job's log (reading what comes) until it ends or ``stop``."""
    with httpx.stream("GET", f"{url}/v1/jobs/{job_id}/log", params={"follow": "true"}, timeout=None) as r:
        for _ in r.iter_bytes():
            if stop.is_set():
                return


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--image", default="kcoral-job:cpu")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    window = args.seconds
    with tempfile.TemporaryDirectory() as tmp:
        server = ServerProcess(Path(tmp) / "data", args.image, 1).start()
        pid = server.proc.pid if server.proc else None
        try:
            send = Path(tmp) / "send"
            send.mkdir()
            sleep = 2 * window + 6
            (send / "quiet.py").write_text(QUIET.format(sleep=sleep))
            with KcoralClient(server.url, timeout=60) as client:
                view = client.submit(PythonSpec(argv=["quiet.py"], timeout_s=120), build_tarball(send, Path(tmp)).path)
                while client.status(view.id).state != "running":
                    time.sleep(0.2)
                time.sleep(2.0)  # its start's work done
                before = cpu_s(pid)
                time.sleep(window)
                alone = cpu_s(pid) - before
                stop = threading.Event()
                follower = threading.Thread(target=_follow, args=(server.url, view.id, stop), daemon=True)
                follower.start()
                time.sleep(1.0)
                before = cpu_s(pid)
                time.sleep(window)
                followed = cpu_s(pid) - before
                stop.set()
                end = client.wait(view.id)
                follower.join(10)
        finally:
            server.stop()
    result = {
        "seconds": window,
        "server_cpu_share_alone": round(alone / window, 5),
        "server_cpu_share_followed": round(followed / window, 5),
        "follower_adds": round((followed - alone) / window, 5),
        "job": end.verdict,
    }
    print(
        f"server CPU, a quiet job: {result['server_cpu_share_alone']:.2%} of a core alone, "
        f"{result['server_cpu_share_followed']:.2%} with one follower ({window:.0f} s each)"
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
