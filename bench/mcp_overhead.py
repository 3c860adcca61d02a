"""What an MCP ``evaluate`` call adds over ``kcoral eval`` for the same candidate (issue 15: under 0.2 s).

    python bench/mcp_overhead.py [--runs 5] [--json FILE]

One kcoral server (CPU, ``demo/softmax``, the honest candidate of tests/attacks); ``--runs`` rounds,
each an evaluation through ``kcoral eval DIR --json`` (a process per call, as an agent's shell runs it)
and one through the ``evaluate`` tool of a ``kcoral mcp`` session that stays open (as an agent host
keeps it), alternating. For each call: its wall time, and the server's own time for the job (created
to finished); wall less server time is what the client side costs. The medians of that, MCP against
the command line, are the answer; the wall times are in the JSON too.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from tests.serverproc import ServerProcess  # noqa: E402

CANDIDATE = ROOT / "tests" / "attacks" / "candidates" / "honest"


def server_seconds(url: str, job_id: str) -> float:
    times = httpx.get(f"{url}/v1/jobs/{job_id}", timeout=30).json()["times"]
    return float(times["finished"] - times["created"])


def cli_eval(url: str, out: Path) -> tuple[float, float]:
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "kcoral", "eval", "demo/softmax", str(CANDIDATE), "--remote", url, "--json",
         "--output-dir", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    wall = time.perf_counter() - began
    doc = json.loads(done.stdout)
    assert done.returncode == 0, done.stderr
    return wall, server_seconds(url, doc["job_id"])


async def mcp_evals(url: str, runs: int, out: Path, cli: list[tuple[float, float]]) -> list[tuple[float, float]]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "kcoral", "mcp", "--remote", url],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    rows = []
    async with Client(params) as client:
        await client.list_tools()
        for n in range(runs):
            cli.append(await anyio.to_thread.run_sync(cli_eval, url, out / f"cli{n}"))
            began = time.perf_counter()
            result = await client.call_tool(
                "evaluate", {"task": "demo/softmax", "directory": str(CANDIDATE), "output_dir": str(out / f"mcp{n}")}
            )
            wall = time.perf_counter() - began
            assert not result.is_error, result.content
            doc: dict[str, Any] = result.structured_content  # type: ignore[assignment]
            rows.append((wall, server_seconds(url, doc["job_id"])))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kcoral-mcp-bench-") as tmp:
        server = ServerProcess(Path(tmp) / "data", "kcoral-job:cpu", 1).start()
        try:
            cli: list[tuple[float, float]] = []
            mcp = anyio.run(mcp_evals, server.url, args.runs, Path(tmp), cli)
        finally:
            server.kill()
            server.remove_containers()
    cli_client = [w - s for w, s in cli]
    mcp_client = [w - s for w, s in mcp]
    out = {
        "runs": args.runs,
        "cli": [{"wall_s": round(w, 3), "server_s": round(s, 3)} for w, s in cli],
        "mcp": [{"wall_s": round(w, 3), "server_s": round(s, 3)} for w, s in mcp],
        "cli_client_median_s": round(statistics.median(cli_client), 3),
        "mcp_client_median_s": round(statistics.median(mcp_client), 3),
    }
    out["mcp_added_s"] = round(out["mcp_client_median_s"] - out["cli_client_median_s"], 3)
    print(
        f"client side (wall less the server's time), median of {args.runs}: "
        f"kcoral eval {out['cli_client_median_s']} s, MCP evaluate {out['mcp_client_median_s']} s: "
        f"MCP adds {out['mcp_added_s']} s"
    )
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
