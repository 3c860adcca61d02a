"""An agent's loop over candidates on demo/softmax, recorded against a real server (issue 33's acceptance):

    python bench/agent_loop.py [--out bench/results/agent-loop.txt]

Starts ``kcoral serve`` (one CPU slot, a temporary data dir), then through the real CLI: five labelled
candidates evaluated one after the other, ``kcoral history``, ``kcoral compare`` of the best two (their
verdict and diff), ``kcoral best``, the best one's receipt verified offline (with the keys saved from
``/v1/keys``) and the same receipt with one figure changed refused; then through ``kcoral mcp`` (the
SDK's own client over stdio): two more labelled candidates, ``history``, ``compare`` and ``best``.
Every command and what it printed goes to the transcript. Not run in CI (it times real evaluations).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.serverproc import ServerProcess  # noqa: E402

TEMPLATE = (ROOT / "tasks/demo/softmax/template.py").read_text()
#: five candidates: label -> the body of run() (x, y as the template has them)
CANDIDATES = {
    "torch-softmax": "        torch.softmax(x, dim=-1, out=y)\n",
    "exp-over-sum": (
        "        e = torch.exp(x - x.amax(dim=-1, keepdim=True))\n"
        "        torch.div(e, e.sum(dim=-1, keepdim=True), out=y)\n"
    ),
    "log-softmax-exp": "        torch.exp(torch.log_softmax(x, dim=-1), out=y)\n",
    "in-place": (
        "        y.copy_(x)\n        y.sub_(y.amax(dim=-1, keepdim=True)).exp_()\n"
        "        y.div_(y.sum(dim=-1, keepdim=True))\n"
    ),
    "float64": "        y.copy_(torch.softmax(x.double(), dim=-1))\n",
}


def source(body: str) -> str:
    head = TEMPLATE[: TEMPLATE.index("    def run():\n") + len("    def run():\n")]
    return head + body + "\n    return run\n"


class Transcript:
    def __init__(self, url: str) -> None:
        self.env = {**os.environ, "KCORAL_REMOTE": url, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
        self.lines: list[str] = []

    def kc(self, *args: str, cwd: Path | None = None) -> tuple[int, str]:
        done = subprocess.run(
            [sys.executable, "-m", "kcoral", *args], capture_output=True, text=True, env=self.env, cwd=cwd
        )
        self.lines += [f"$ kcoral {' '.join(args)}", *done.stdout.rstrip().splitlines()]
        self.lines += [f"  [stderr] {line}" for line in done.stderr.rstrip().splitlines() if line]
        self.lines.append(f"  [exit {done.returncode}]")
        print("\n".join(self.lines[-12:]), flush=True)
        return done.returncode, done.stdout


def cli_loop(t: Transcript, tmp: Path) -> dict[str, Any]:
    for label, body in CANDIDATES.items():
        folder = tmp / label
        folder.mkdir()
        (folder / "solution.py").write_text(source(body))
        t.kc("eval", "demo/softmax", str(folder), "--label", label, "-o", str(tmp / f"out-{label}"))
    _, hist = t.kc("history", "demo/softmax", "--json")
    rows = [e for e in json.loads(hist)["evaluations"] if e.get("score")]
    rows.sort(key=lambda e: e["score"]["speedup"], reverse=True)
    if len(rows) >= 2:
        t.kc("compare", rows[1]["label"], rows[0]["label"])
    t.kc("history", "demo/softmax")
    t.kc("best", "demo/softmax")
    best = rows[0]["label"] if rows else "torch-softmax"
    receipt = tmp / f"out-{best}" / "receipt.json"
    keys = tmp / "keys.json"
    import httpx

    keys.write_text(httpx.get(t.env["KCORAL_REMOTE"] + "/v1/keys").text)
    t.lines.append(f"$ curl $KCORAL_REMOTE/v1/keys > keys.json   # saved: {keys.stat().st_size} bytes")
    t.kc("verify", str(receipt), "--key", str(keys))
    doc = json.loads(receipt.read_text())
    doc["score"]["speedup"] = round(doc["score"]["speedup"] * 1.5, 4)
    forged = tmp / "forged-receipt.json"
    forged.write_text(json.dumps(doc))
    t.lines.append("# the same receipt with its speedup made 1.5 times larger:")
    code, _ = t.kc("verify", str(forged), "--key", str(keys))
    return {"ranked": [(r["label"], r["score"]["speedup"]) for r in rows], "forged_exit": code}


def mcp_loop(t: Transcript, tmp: Path) -> None:
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "kcoral", "mcp"], env=t.env, cwd=str(tmp))

    async def session() -> None:
        async with Client(params) as client:

            async def tool(name: str, **arguments: Any) -> Any:
                result = await client.call_tool(name, arguments)
                content = result.structured_content
                shown = {k: v for k, v in (content or {}).items() if k not in ("workloads", "log_tail")}
                t.lines.append(f"mcp> {name}({json.dumps(arguments)[:200]})")
                t.lines += ["  " + line for line in json.dumps(shown, indent=1)[:3000].splitlines()]
                print("\n".join(t.lines[-8:]), flush=True)
                return content

            for label in ("mcp-torch-softmax", "mcp-exp-over-sum"):
                body = CANDIDATES[label.removeprefix("mcp-")]
                await tool("evaluate", task="demo/softmax", files={"solution.py": source(body)}, label=label)
            await tool("history", task="demo/softmax", limit=10)
            await tool("compare", a="mcp-torch-softmax", b="mcp-exp-over-sum")
            await tool("best", task="demo/softmax")

    anyio.run(session)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=str(ROOT / "bench/results/agent-loop.txt"))
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp())
    server = ServerProcess(tmp / "data", "kcoral-job:cpu", 1).start()
    t = Transcript(server.url)
    try:
        summary = cli_loop(t, tmp)
        mcp_loop(t, tmp)
    finally:
        server.stop()
        server.remove_containers()
    t.lines.append(f"# summary: {json.dumps(summary)}")
    Path(args.out).write_text("\n".join(t.lines) + "\n")
    print(f"transcript: {args.out}")


if __name__ == "__main__":
    main()
