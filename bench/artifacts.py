"""Artifacts: 100 MB up and 100 MB down through one server on loopback, and the server's memory.

    python bench/artifacts.py [--mb 100] [--runs 3] [--image kcoral-job:cpu] [--json FILE]

Starts a server (tests.serverproc.ServerProcess) on a temporary data dir. Each run, timed apart:
  pack      the client packs a folder holding one --mb MB file of random bytes (cli.tarball)
  upload    create the job and send the packed input (cli.client.submit: the server hashes, scans
            and unpacks it before it answers)
  download  the job wrote --mb MB of random bytes to $KCORAL_OUTPUT_DIR; the client streams it into a
            folder and checks its sha256 (cli.client.download)
MB/s = --mb / seconds. The server's peak RSS (VmHWM) is read at the end. Each run also records the
CPU seconds the server process and this client spent on its upload and its download (``*_cpu_s``),
and the result the load average before and after: on a shared machine the wall times swing with
other work, the CPU much less. ``--tmp /dev/shm`` keeps the
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
from kcoral.protocol.models import PythonSpec  # noqa: E402
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


def cpu_s(pid: int | None) -> float:
    """CPU seconds (user + system) process ``pid`` has used, all its threads (nan: not ours to read)."""
    if pid is None:
        return float("nan")
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_run(client: KcoralClient, server_pid: int | None, tmp: Path, mb: int, i: int) -> dict[str, float]:
    send = tmp / f"send{i}"
    send.mkdir()
    with open(send / "in.bin", "wb") as f:
        for _ in range(mb):
            f.write(os.urandom(1 << 20))
    (send / "w.py").write_text(WRITE.format(mb=mb))
    t0 = time.perf_counter()
    tar = build_tarball(send, tmp)
    t1 = time.perf_counter()
    s1, c1 = cpu_s(server_pid), time.process_time()
    view = client.submit(PythonSpec(argv=["w.py"], timeout_s=300), tar.path)
    t2 = time.perf_counter()
    s2, c2 = cpu_s(server_pid), time.process_time()
    tar.remove()
    view = client.wait(view.id)
    if view.verdict != "ok":
        raise SystemExit(f"job {view.id}: {view.verdict} {view.reason}")
    out = tmp / f"out{i}"
    t3 = time.perf_counter()
    s3, c3 = cpu_s(server_pid), time.process_time()
    client.download_outputs(view, out)
    t4 = time.perf_counter()
    s4, c4 = cpu_s(server_pid), time.process_time()
    assert (out / "out.bin").stat().st_size == mb << 20
    return {
        "pack_s": t1 - t0,
        "upload_s": t2 - t1,
        "download_s": t4 - t3,
        "upload_server_cpu_s": s2 - s1,
        "upload_client_cpu_s": c2 - c1,
        "download_server_cpu_s": s4 - s3,
        "download_client_cpu_s": c4 - c3,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--image", default="kcoral-job:cpu")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--remote", help="a running server (its CPU and memory are not read)")
    parser.add_argument("--tmp", type=Path, help="where the files and the server's data dir go [default: $TMPDIR]")
    args = parser.parse_args()
    runs: list[dict[str, float]] = []
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        server = None if args.remote else ServerProcess(Path(tmp) / "data", args.image, 1).start()
        url = args.remote or (server.url if server else "")
        pid = server.proc.pid if server and server.proc else None
        try:
            with KcoralClient(url, timeout=300) as client:
                for i in range(args.runs):
                    runs.append(one_run(client, pid, Path(tmp), args.mb, i))
                    print(json.dumps({k: round(v, 3) for k, v in runs[-1].items()}), flush=True)
            rss = peak_rss_mb(pid) if pid is not None else float("nan")
        finally:
            if server is not None:
                server.stop()
    result: dict[str, object] = {
        "mb": args.mb,
        "runs": runs,
        "server_peak_rss_mb": round(rss, 1),
        "load_avg_before": load_before,
        "load_avg_after": os.getloadavg(),
    }
    for key in ("pack_s", "upload_s", "download_s"):
        med = statistics.median(r[key] for r in runs)
        result[key.replace("_s", "_mb_per_s")] = round(args.mb / med, 1)
    for key in ("upload_server_cpu_s", "upload_client_cpu_s", "download_server_cpu_s", "download_client_cpu_s"):
        result[f"median_{key}"] = round(statistics.median(r[key] for r in runs), 3)
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
