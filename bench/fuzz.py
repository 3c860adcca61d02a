"""Schema-driven fuzzing of a kcoral server at length: tests/fuzz's harness, in rounds, for >= N requests.

    python bench/fuzz.py [--requests 2000] [--remote URL] [--image kcoral-job:cpu] [--slots 2] [--json FILE]

Without --remote it starts ``kcoral serve`` (tests.serverproc.ServerProcess) on loopback with a temporary
data dir, its stderr (where the server logs) kept in a file. Each round is the CI test's run (stateless
positive and negative cases of every operation, then schemathesis' state machine over the links) with
its own hypothesis seed (--seed, +1 a round), so the whole run is repeatable. It prints: requests made,
answers >= 500 (target 0), error bodies not in the {"error", "message"} shape, every finding (5xx,
shape, schema non-conformance, traceback) with a curl command, the server's RSS before and after
(VmRSS, and VmHWM: its peak), and whether the server's log had a "Traceback".

Exit status: 1 when any answer was >= 500 or the server logged a traceback, else 0 (schema findings
are printed, and counted in --json, but do not fail the bench).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from hypothesis.configuration import set_hypothesis_home_dir

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fuzz.test_api_fuzz import SEED, Fuzzer, drain, fuzz  # noqa: E402
from tests.serverproc import ServerProcess  # noqa: E402

#: examples per operation and mode, scenarios and steps, of one round (about 700 requests)
ROUND_EXAMPLES = 30
ROUND_SCENARIOS = 60
ROUND_STEPS = 6


class ServerLogFile:
    """The server's stderr, as tests.fuzz's ServerLog: positions are byte offsets."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def mark(self) -> int:
        return self.path.stat().st_size

    def tracebacks_since(self, mark: int) -> list[str]:
        with open(self.path, "rb") as f:
            f.seek(mark)
            text = f.read().decode(errors="replace")
        if "Traceback" not in text:
            return []
        start = text.rfind("\n", 0, text.index("Traceback")) + 1  # from the line that logged it
        return [text[start:].strip()]

    def has_traceback(self) -> bool:
        return "Traceback" in self.path.read_text(errors="replace")


def memory_kib(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of ``pid`` in KiB (from /proc/PID/status)."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0])
    return fields


@contextlib.contextmanager
def stderr_to(path: Path) -> Iterator[None]:
    """This process's fd 2 into ``path`` while the block runs (a child started meanwhile keeps it)."""
    saved = os.dup(2)
    with open(path, "ab") as log:
        os.dup2(log.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=2000, help="fuzz at least this many requests")
    parser.add_argument("--remote", help="fuzz a running server (loopback) instead of starting one")
    parser.add_argument("--image", default="kcoral-job:cpu")
    parser.add_argument("--slots", type=int, default=2, help="CPU slots of the server started here")
    parser.add_argument("--seed", type=int, default=SEED, help="hypothesis seed of the first round")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="kcoral-fuzz-") as tmp:
        set_hypothesis_home_dir(Path(tmp) / "hypothesis")  # not .hypothesis/ in the working directory
        log = ServerLogFile(Path(tmp) / "server.log")
        log.path.touch()
        server = None
        if not args.remote:
            with stderr_to(log.path):
                server = ServerProcess(Path(tmp) / "data", args.image, args.slots).start()
        url = args.remote or server.url  # type: ignore[union-attr]
        try:
            before = memory_kib(server.proc.pid) if server and server.proc else {}
            t0 = time.monotonic()
            fuzzer: Fuzzer = fuzz(
                url,
                log if server else None,
                ROUND_EXAMPLES,
                ROUND_SCENARIOS,
                ROUND_STEPS,
                requests_wanted=args.requests,
                seed=args.seed,
            )
            elapsed = time.monotonic() - t0
            busy = drain(url, timeout=120)
            after = memory_kib(server.proc.pid) if server and server.proc else {}
            traceback = log.has_traceback() if server else None
            log_tail = log.path.read_text(errors="replace")[-4000:] if server else ""
        finally:
            if server is not None:
                server.stop()

    server_errors = sum(n for code, n in fuzzer.statuses.items() if code >= 500)
    print(f"\nrequests made:                    {fuzzer.requests_made} in {elapsed:.1f} s")
    print(f"answers >= 500:                   {server_errors}   (target 0)")
    print(f"error bodies not in our shape:    {fuzzer.bad_error_bodies}")
    print(f"statuses:                         {dict(sorted(fuzzer.statuses.items()))}")
    print(f"per operation:\n{fuzzer.per_operation()}")
    if before:
        print(f"server RSS before:                {before['VmRSS'] / 1024:.1f} MiB")
        rss, hwm = after["VmRSS"] / 1024, after["VmHWM"] / 1024
        print(f"server RSS after:                 {rss:.1f} MiB (peak VmHWM {hwm:.1f} MiB)")
        print(f"Traceback in the server's log:    {'YES' if traceback else 'no'}")
    else:
        print("server RSS and log:               n/a (--remote)")
    if busy:
        print(f"jobs still queued or running 120 s after the fuzzing: {busy}")
    print(f"findings:                         {len(fuzzer.findings)}")
    for finding in fuzzer.findings:
        print(f"\n{finding}")
    if traceback:
        print(f"\nthe server's log (its end):\n{log_tail}")
    if args.json:
        result = {
            "requests": fuzzer.requests_made,
            "seconds": elapsed,
            "server_errors": server_errors,
            "bad_error_bodies": fuzzer.bad_error_bodies,
            "statuses": {str(k): v for k, v in sorted(fuzzer.statuses.items())},
            "rss_kib_before": before.get("VmRSS"),
            "rss_kib_after": after.get("VmRSS"),
            "hwm_kib_after": after.get("VmHWM"),
            "traceback_in_log": traceback,
            "findings": [vars(f) for f in fuzzer.findings],
        }
        args.json.write_text(json.dumps(result, indent=2))
    return 1 if server_errors or traceback else 0


if __name__ == "__main__":
    sys.exit(main())
