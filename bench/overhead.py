"""Per-job overhead of kcoral against a bare ``docker run --rm`` of the same image and command.

    python bench/overhead.py [--image kcoral-job:cpu] [--runs 20] [--clients 4] [--jobs-per-client 5]

Starts a server on a temporary data dir (or uses --remote URL), then measures, in one run:
  bare     docker run --rm IMAGE python3 -c pass                  (the docker CLI, as a person would)
  library  submit + upload + follow the log to the end + final status through cli.client
  cli      the whole `kcoral python --send DIR -c pass` command as a subprocess, as the console script runs it
and the throughput of --clients concurrent clients each running --jobs-per-client jobs. Each timed
run follows a pause (--settle, 0.5 s), so what a job leaves to the background (its slot's next
standby container, runner/standby.py) is done before the next one is timed, as between an agent's
jobs; --no-standby measures a server without standbys.
Target (issue 12): the CLI's median at most the bare median (1.0x).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kcoral.cli.client import KcoralClient  # noqa: E402
from kcoral.cli.tarball import build_tarball  # noqa: E402
from kcoral.protocol.models import JobState, JobView, PythonSpec  # noqa: E402
from tests.serverproc import ServerProcess  # noqa: E402

COMMAND = ["python3", "-c", "pass"]


def bare_run(image: str, docker_args: list[str], python: str) -> float:
    t0 = time.perf_counter()
    subprocess.run(
        ["docker", "run", "--rm", *docker_args, image, python, *COMMAND[1:]], check=True, capture_output=True
    )
    return time.perf_counter() - t0


#: where a library run's time went, per run: milliseconds from the submit to each point (the server's
#: clock for its own points; client and server share the host's clock on loopback)
TIMELINES: list[dict[str, float]] = []


def library_run(client: KcoralClient, tar_path: Path) -> float:
    t0, wall0 = time.perf_counter(), time.time()
    job = client.submit(PythonSpec(argv=COMMAND[1:], timeout_s=60), tar_path)
    final: list[JobView] = []
    for _ in client.follow_log(job.id, on_status=lambda view: final.append(view)):
        pass
    view = final[-1] if final and final[-1].state == JobState.finished else client.status(job.id)
    elapsed = time.perf_counter() - t0
    if view.verdict != "ok":
        raise SystemExit(f"job {job.id} ended {view.verdict}: {view.reason}")
    times, ms = view.times, lambda t: round(1000 * (t - wall0), 1)
    step = times.steps[0] if times.steps else None
    points = {"queued": times.queued, "started": times.started, "container_started": step and step.started,
              "container_ended": step and step.ended, "finished": times.finished}  # fmt: skip
    TIMELINES.append({**{k: ms(v) for k, v in points.items() if v is not None}, "client_has_result": elapsed * 1000})
    return elapsed


#: what the ``kcoral`` console script that pip writes runs (not ``python -m kcoral``: runpy's import)
CONSOLE_SCRIPT = "import sys; from kcoral.cli.console import main; sys.argv[0] = 'kcoral'; sys.exit(main())"


def cli_run(url: str, send: Path, python: str = sys.executable) -> float:
    t0 = time.perf_counter()
    subprocess.run(
        [python, "-c", CONSOLE_SCRIPT, "python", "--remote", url, "--send", str(send), "-c", "pass"],
        check=True,
        capture_output=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])},
    )
    return time.perf_counter() - t0


def throughput(url: str, tar_path: Path, clients: int, per_client: int) -> float:
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            with KcoralClient(url, timeout=120) as client:
                for _ in range(per_client):
                    library_run(client, tar_path)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise SystemExit(f"throughput run failed: {errors[0]}")
    return clients * per_client / (time.perf_counter() - t0)


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_s": statistics.median(ordered),
        "min_s": ordered[0],
        "max_s": ordered[-1],
        "p90_s": ordered[int(0.9 * (len(ordered) - 1))],
        "n": len(ordered),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--image", default="kcoral-job:cpu")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--jobs-per-client", type=int, default=5)
    parser.add_argument("--slots", type=int, default=4, help="server CPU slots (concurrent jobs)")
    parser.add_argument("--remote", help="use a running server instead of starting one")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument(
        "--bare-args",
        default="",
        help="more `docker run` options for the bare run, so that it starts what the server's job starts "
        "(on a host-toolchain GPU host: its read-only mounts and the GPU's device nodes)",
    )
    parser.add_argument("--python", default="python3", help="the interpreter the bare run starts")
    parser.add_argument(
        "--client-python",
        default=sys.executable,
        help="the interpreter the CLI runs with (e.g. a virtual environment's of its own, as "
        "`pip install kcoral-bench` into a fresh one gives; the kcoral package is found through PYTHONPATH)",
    )
    parser.add_argument("--no-standby", action="store_true", help="the server started here keeps no standby")
    parser.add_argument("--settle", type=float, default=0.5, help="seconds of pause before each timed run")
    args = parser.parse_args()
    bare_args = shlex.split(args.bare_args)

    with tempfile.TemporaryDirectory() as tmp:
        send = Path(tmp) / "send"
        send.mkdir()
        tarball = build_tarball(send, tmp)
        server = (
            None
            if args.remote
            else ServerProcess(
                Path(tmp) / "data", args.image, args.slots, None, *(["--no-standby"] if args.no_standby else [])
            ).start()
        )
        url = args.remote or server.url
        try:
            with KcoralClient(url, timeout=120) as client:
                bare_run(args.image, bare_args, args.python)
                library_run(client, tarball.path)
                bare, library, cli = [], [], []
                TIMELINES.clear()
                for _ in range(args.runs):  # interleaved, so drift hits all three alike
                    # each after a pause: what a job leaves to the background (a standby's start)
                    # is done before the next is timed, as between an agent's jobs
                    for samples, one in ((bare, lambda: bare_run(args.image, bare_args, args.python)),
                                         (library, lambda: library_run(client, tarball.path)),
                                         (cli, lambda: cli_run(url, send, args.client_python))):  # fmt: skip
                        time.sleep(args.settle)
                        samples.append(one())
            jobs_per_s = throughput(url, tarball.path, args.clients, args.jobs_per_client)
        finally:
            if server is not None:
                server.stop()

    timed = TIMELINES[: args.runs]
    result = {
        "image": args.image,
        "bare_args": bare_args,
        "settle_s": args.settle,
        "standby": not args.no_standby,
        "client_python": args.client_python,
        "bare": summary(bare),
        "library": summary(library),
        "cli": summary(cli),
        "ratio_library": statistics.median(library) / statistics.median(bare),
        "ratio_cli": statistics.median(cli) / statistics.median(bare),
        "throughput_jobs_per_s": jobs_per_s,
        #: the library runs' medians, ms after the submit (TIMELINES)
        "library_timeline_ms": {k: statistics.median(t[k] for t in timed) for k in timed[0]} if timed else {},
        "clients": args.clients,
        "jobs_per_client": args.jobs_per_client,
    }
    print(f"{'':10}{'median':>10}{'min':>10}{'p90':>10}{'max':>10}   (seconds, n={args.runs})")
    for name in ("bare", "library", "cli"):
        s = result[name]
        print(f"{name:10}{s['median_s']:10.3f}{s['min_s']:10.3f}{s['p90_s']:10.3f}{s['max_s']:10.3f}")
    ratios = f"ratio library/bare {result['ratio_library']:.2f}x   cli/bare {result['ratio_cli']:.2f}x"
    print(f"{ratios} (target: cli <= 1.0x)")
    print(f"throughput, {args.clients} concurrent clients: {jobs_per_s:.2f} jobs/s")
    timeline = "  ".join(f"{k} {v:.0f}" for k, v in result["library_timeline_ms"].items())
    print(f"library run, median ms after the submit: {timeline}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
