"""What an agent sees, recorded against a real server (issue 11's acceptance):

    python bench/agent_acceptance.py        # writes bench/results/agent-acceptance.json

Starts ``kcoral serve`` (two CPU slots, a temporary data dir) and, through the real CLI: each first
mistake of tests/integration/test_eval_mistakes.py evaluated as text and as --json, ``kcoral tasks
show`` for demo/softmax and the KDA task, ``kcoral init`` + a passing evaluation with its phase times,
a check, and README's agent loop run as a script.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.integration.test_eval_mistakes import MISTAKES  # noqa: E402
from tests.serverproc import ServerProcess  # noqa: E402


class Cli:
    def __init__(self, url: str) -> None:
        self.env = {**os.environ, "KCORAL_REMOTE": url, "PYTHONPATH": str(ROOT)}

    def __call__(self, *args: str, cwd: Path | None = None) -> tuple[int, str, str, float]:
        began = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "kcoral", *args], capture_output=True, text=True, env=self.env, cwd=cwd
        )
        return done.returncode, done.stdout, done.stderr, time.monotonic() - began


def mistakes(kc: Cli, tmp: Path) -> dict[str, Any]:
    rows = {}
    for name, (source, _, _) in MISTAKES.items():
        folder = tmp / name
        folder.mkdir()
        (folder / "solution.py").write_text(source)
        code, out, err, took = kc("eval", "demo/softmax", str(folder), "-o", str(tmp / f"o-{name}"))
        json_code, json_out, _, _ = kc("eval", "demo/softmax", str(folder), "--json", "-o", str(tmp / f"j-{name}"))
        doc = json.loads(json_out)
        lines = out.splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith("holdout correctness"))
        rows[name] = {
            "exit": code,
            "stderr_line": [line for line in err.splitlines() if line.startswith("kcoral: evaluation failed")],
            "report_head": lines[start : start + 5],
            "json_exit": json_code,
            "json_failure": doc.get("failure"),
            "json_reason_standard": doc["workloads"][0]["reason"] if doc.get("workloads") else None,
            "seconds": round(took, 1),
        }
        print(name, json.dumps(rows[name], indent=1), flush=True)
    return rows


def readme_loop(kc: Cli, tmp: Path) -> dict[str, Any]:
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## From a program") :]
    code = section[section.index("```python\n") + len("```python\n") : section.index("\n```\n")]
    folder = tmp / "loop"
    folder.mkdir()
    (folder / "loop.py").write_text(code)
    began = time.monotonic()
    done = subprocess.run([sys.executable, "loop.py"], capture_output=True, text=True, env=kc.env, cwd=folder)
    return {"exit": done.returncode, "stdout": done.stdout, "stderr_tail": done.stderr[-500:],
            "seconds": round(time.monotonic() - began, 1)}  # fmt: skip


def main() -> None:
    out: dict[str, Any] = {}
    tmp = Path(tempfile.mkdtemp())
    server = ServerProcess(tmp / "data", "kcoral-job:cpu", 2).start()
    kc = Cli(server.url)
    try:
        out["mistakes"] = mistakes(kc, tmp)
        for task in ("demo/softmax", "kda/forward_b1_t8192_h96"):
            out[f"show {task}"] = kc("tasks", "show", task)[1]
            print(out[f"show {task}"], flush=True)
        good = tmp / "good"
        kc("init", "demo/softmax", str(good))
        code, text, _, took = kc("eval", "demo/softmax", str(good), "-o", str(tmp / "og"))
        job = json.loads(kc("jobs", "--json", "--limit", "1")[1])[0]
        out["good_eval"] = {"exit": code, "tail": text.splitlines()[-6:], "seconds": round(took, 1),
                            "phases": job["times"]["phases"]}  # fmt: skip
        code, text, _, took = kc("eval", "demo/softmax", str(good), "--check", "-o", str(tmp / "oc"))
        out["check"] = {"exit": code, "tail": text.splitlines()[-3:], "seconds": round(took, 1)}
        out["loop"] = readme_loop(kc, tmp)
        print(json.dumps({k: out[k] for k in ("good_eval", "check", "loop")}, indent=1))
    finally:
        server.stop()
        server.remove_containers()
    (ROOT / "bench/results/agent-acceptance.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
