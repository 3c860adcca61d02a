"""Artifacts: 100 MB up and 100 MB down through one server on loopback, and the server's memory.

    python bench/artifacts.py [--mb 100] [--runs 3] [--image kcoral-job:cpu] [--json FILE]

Starts a server (tests.serverproc.ServerProcess) on a temporary data dir. Each run, timed apart:
  pack      the client packs a folder holding one --mb MB file of random bytes (cli.tarball)
  upload    create the job and send the packed input (cli.client.submit: the server hashes, scans
            and unpacks it before it answers)
  download  the job wrote --mb MB of random bytes to $KCORAL_OUTPUT_DIR; the client streams it into a
            folder and checks its sha256 (cli.client.download)
MB/s = --mb / seconds. The server's peak RSS (VmHWM) is read at the end. ``--tmp /dev/shm`` keeps the
disk out of it (each run writes ~700 MB: on a small VM's disk, write-back stalls dominate).
Target (issue 12): upload and download >= 500 MB/s each, server memory bounded.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kcoral.cli.client import KcoralClient  # noqa: E402
from kcoral.cli.tarball import build_tarball  # noqa: E402
from kcoral.runner.models import PythonSpec  # noqa: E402
from tests.serverproc import ServerProcess  # noqa: E402

WRITE = (
    "import os\n"
    "n = {mb} << 20\n"
    "with open(os.path.join(os.environ['KCORAL_OUTPUT_DIR'], 'out.bin'), 'wb') as f:\n"
    "    for _ in range(n >> 20):\n"
    "        f.write(os.urandom(1 << 20))\n"
)


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def one_run(client: KcoralClient, tmp: Path, mb: int, i: int) -> dict[str, float]:
    send = tmp / f"send{i}"
    send.mkdir()
    with open(send / "in.bin", "wb") as f:
        for _ in range(mb):
            f.write(os.urandom(1 << 20))
    (send / "w.py").write_text(WRITE.format(mb=mb))
    t0 = time.perf_counter()
    tar = build_tarball(send, tmp)
    t1 = time.perf_counter()
    view = client.submit(PythonSpec(argv=["w.py"], timeout_s=300), tar.path)
    t2 = time.perf_counter()
    tar.remove()
    view = client.wait(view.id)
    if view.verdict != "ok":
        raise SystemExit(f"job {view.id}: {view.verdict} {view.reason}")
    out = tmp / f"out{i}"
    t3 = time.perf_counter()
    client.download_outputs(view, out)
    t4 = time.perf_counter()
    assert (out / "out.bin").stat().st_size == mb << 20
    return {"pack_s": t1 - t0, "upload_s": t2 - t1, "download_s": t4 - t3}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--image", default="kcoral-job:cpu")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--tmp", type=Path, help="where the files and the server's data dir go [default: $TMPDIR]")
    args = parser.parse_args()
    runs: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        server = ServerProcess(Path(tmp) / "data", args.image, 1).start()
        try:
            with KcoralClient(server.url, timeout=300) as client:
                for i in range(args.runs):
                    runs.append(one_run(client, Path(tmp), args.mb, i))
                    print(json.dumps({k: round(v, 3) for k, v in runs[-1].items()}), flush=True)
            rss = peak_rss_mb(server.proc.pid)
        finally:
            server.stop()
    result: dict[str, object] = {"mb": args.mb, "runs": runs, "server_peak_rss_mb": round(rss, 1)}
    for key in ("pack_s", "upload_s", "download_s"):
        med = statistics.median(r[key] for r in runs)
        result[key.replace("_s", "_mb_per_s")] = round(args.mb / med, 1)
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
