"""Issue 32's acceptance run: every pack problem a server serves, judged by its supervisor through the CLI.

    python bench/packs_acceptance.py --out DIR [--remote URL] [--shard I/N] [--deadline-s S] [--prefix P ...]

For each problem (the server's tasks of a pack format, sorted by id; ``--shard I/N`` takes every Nth
from the Ith; ``--prefix`` keeps the ids that start with one of them):
(a) ``kcoral init TASK DIR`` writes the format's native submission (KernelBench's Model as ModelNew,
    GPU MODE's template) and ``kcoral eval TASK DIR --json -o ...`` judges it: expected PASS with 1.0
    inside the speedup's 95% interval (the problem's own code against itself);
(b) the same submission made wrong on purpose (:func:`wrong_submission`: one element of the first
    output off by 50% and 1, so that no rule's tolerance admits it) is judged: expected FAIL with a reason.
One line per evaluation as it ends; at the end a markdown table (DIR/packs.md) and every row as JSON
(DIR/packs.json), each evaluation's report under DIR/reports/. A problem the server cannot load or the
GPU cannot run is a row with its reason. Past ``--deadline-s`` (from this program's start) no
evaluation is started whose time, by the longest so far, would end after it; the rest are rows "not run".
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

FORMATS = ("kernelbench", "gpumode")
#: kcoral eval's exit codes (docs/cli.md) as verdicts
VERDICTS = {0: "PASS", 1: "FAIL", 3: "INCONCLUSIVE", 124: "TIMEOUT", 125: "INFRA-ERROR", 130: "CANCELLED"}
#: seconds one evaluation may take here before it is killed (the pack's own limit is its timeout_s)
EVAL_TIMEOUT_S = 900
WRONG = """

# --- made wrong on purpose (bench/packs_acceptance.py): the first output's first element is off ---
def _kcoral_wrong(result):
    if isinstance(result, (tuple, list)):
        return type(result)(_kcoral_wrong(r) if i == 0 else r for i, r in enumerate(result))
    result = result.detach().clone().contiguous()
    flat = result.view(-1)
    if result.is_floating_point():
        flat[0] = flat[0] * 1.5 + 1.0
    else:
        flat[0] = flat[0] * 2 + 1
    return result
"""
WRONG_KERNELBENCH = """

_kcoral_right_forward = ModelNew.forward


def _kcoral_wrong_forward(self, *args, **kwargs):
    return _kcoral_wrong(_kcoral_right_forward(self, *args, **kwargs))


ModelNew.forward = _kcoral_wrong_forward
"""
WRONG_GPUMODE = """

_kcoral_right_kernel = custom_kernel


def custom_kernel(data):
    return _kcoral_wrong(_kcoral_right_kernel(data))
"""


#: kcoral's exit code for "not now, the same call may succeed later" (the server busy: ServerBusy)
EXIT_TRY_LATER = 75


def kcoral(*args: str, remote: str, timeout: float = 120, tries: int = 40) -> subprocess.CompletedProcess[str]:
    """``python -m kcoral ARGS --remote URL``, its output captured; asked again (5 s apart) while the server
    answers busy (a fresh server describes its packs' problems first)."""
    argv = [sys.executable, "-m", "kcoral", *args, "--remote", remote]
    for _ in range(tries):
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired as exc:
            return subprocess.CompletedProcess(argv, 124, str(exc.stdout or ""), f"killed after {timeout:g} s here")
        if done.returncode != EXIT_TRY_LATER:
            return done
        time.sleep(5)
    return done


def wrong_submission(template: str, fmt: str) -> str:
    """The native submission with its result made wrong after it is computed (the template's own code)."""
    return template + WRONG + (WRONG_KERNELBENCH if fmt == "kernelbench" else WRONG_GPUMODE)


def shard(ids: list[str], spec: str) -> list[str]:
    """The ``I/N`` shard of the sorted ``ids``: every Nth id from the Ith (the formats spread alike)."""
    index, count = (int(x) for x in spec.split("/"))
    if not 1 <= index <= count:
        raise SystemExit(f"--shard {spec}: I/N with 1 <= I <= N")
    return sorted(ids)[index - 1 :: count]


def evaluate(task: str, folder: Path, out: Path, remote: str) -> dict[str, Any]:
    """One ``kcoral eval``: its verdict, score, reason and wall time."""
    began = time.monotonic()
    done = kcoral("eval", task, str(folder), "--json", "--output-dir", str(out), remote=remote, timeout=EVAL_TIMEOUT_S)
    seconds = round(time.monotonic() - began, 1)
    (out / "stdout.txt").write_text(done.stdout)
    (out / "stderr.txt").write_text(done.stderr)
    report: dict[str, Any] = {}
    try:
        report = json.loads((out / "report.json").read_text())
    except (OSError, ValueError):
        with contextlib.suppress(ValueError):
            report = json.loads(done.stdout)
    summary = report.get("summary") or {}
    lo, hi = summary.get("speedup_lo"), summary.get("speedup_hi")
    return {
        "verdict": VERDICTS.get(done.returncode, f"exit {done.returncode}"),
        "exit": done.returncode,
        "speedup": summary.get("speedup"),
        "interval": [lo, hi] if lo is not None and hi is not None else None,
        "contains_1": (lo <= 1.0 <= hi) if lo is not None and hi is not None else None,
        "passed": f"{report.get('passed')}/{report.get('total')}" if "total" in report else None,
        "holdout": report.get("holdout"),
        "flags": report.get("flags") or [],
        "timed": [
            {k: w.get(k) for k in ("id", "baseline_ms", "kernel_ms", "speedup", "samples", "stopped_by")}
            for w in report.get("workloads", [])
            if w.get("timed")
        ],
        "reason": reason(report, done),
        "seconds": seconds,
    }


def reason(report: dict[str, Any], done: subprocess.CompletedProcess[str]) -> str:
    """Why an evaluation did not pass: its first failed workload's reason, its flags, or what the CLI said."""
    for w in report.get("workloads", []):
        if w.get("verdict") not in (None, "PASS") and w.get("reason"):
            return f"{w['id']}: {w['reason']}"[:300]
    if report.get("flags"):
        return "flags: " + "; ".join(str(f) for f in report["flags"])[:300]
    if done.returncode == 0:
        return ""
    said = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    return (said[-1] if said else f"exit {done.returncode}")[:300]


def interval(row: dict[str, Any]) -> str:
    iv = row.get("interval")
    return f"[{iv[0]:.3f}, {iv[1]:.3f}]" if iv else "-"


def line(task: str, expect: str, result: dict[str, Any]) -> str:
    speedup = f"{result['speedup']:.3f}" if result.get("speedup") is not None else "-"
    return (
        f"{task}  expect {expect}: {result['verdict']}  speedup {speedup} {interval(result)}  "
        f"{result['seconds']:.1f} s  {result.get('reason') or ''}"
    )


def judge_right(row: dict[str, Any]) -> bool:
    right = row.get("right") or {}
    return right.get("verdict") == "PASS" and bool(right.get("contains_1"))


def judge_wrong(row: dict[str, Any]) -> bool:
    wrong = row.get("wrong") or {}
    return wrong.get("verdict") == "FAIL" and bool(wrong.get("reason"))


def table(rows: list[dict[str, Any]]) -> str:
    """The rows as markdown: the template's verdict and score, the wrong submission's verdict, and the
    reason (the template's where it did not pass, else the wrong one's)."""
    head = (
        "| task | template | speedup | 95% interval | holds 1.0 | s | cold/warm | wrong | s | reason | ok |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    body = []
    for row in rows:
        right, wrong = row.get("right") or {}, row.get("wrong") or {}
        if not right:
            body.append(f"| {row['task']} | {row['status']} | - | - | - | - | - | - | - | {row.get('note', '')} | no |")
            continue
        speedup = f"{right['speedup']:.3f}" if right.get("speedup") is not None else "-"
        why = (right.get("reason") if right["verdict"] != "PASS" else wrong.get("reason")) or ""
        body.append(
            f"| {row['task']} | {right['verdict']} | {speedup} | {interval(right)} | "
            f"{'yes' if right.get('contains_1') else 'no'} | {right['seconds']:.1f} | {right['start']} | "
            f"{wrong.get('verdict', '-')} | {wrong.get('seconds', 0.0):.1f} | {why.replace('|', '/')[:160]} | "
            f"{'yes' if judge_right(row) and judge_wrong(row) else 'no'} |"
        )
    return head + "\n".join(body) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--remote", default=os.environ.get("KCORAL_REMOTE", "http://127.0.0.1:8901"))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--shard", default="1/1")
    parser.add_argument("--deadline-s", type=float, default=0.0, help="0: none")
    parser.add_argument("--prefix", action="append", default=[], help="keep the task ids that start with one")
    args = parser.parse_args()
    began = time.monotonic()
    args.out.mkdir(parents=True, exist_ok=True)

    listed = kcoral("tasks", "--json", remote=args.remote)
    if listed.returncode != 0:
        print(f"kcoral tasks: exit {listed.returncode}: {listed.stderr.strip()[-500:]}")
        return 2
    tasks = {t["id"]: t for t in json.loads(listed.stdout) if t.get("format") in FORMATS}
    ids = [i for i in tasks if not args.prefix or any(i.startswith(p) for p in args.prefix)]
    if not ids:
        print(f"the server at {args.remote} serves no problem of {', '.join(FORMATS)} (started without the packs?)")
        return 2
    ids = shard(ids, args.shard)
    jobs_before = kcoral("jobs", "--json", remote=args.remote)
    earlier = len(json.loads(jobs_before.stdout)) if jobs_before.returncode == 0 else None
    print(f"{len(ids)} problems (shard {args.shard} of {len(tasks)}); the server ran {earlier} jobs before", flush=True)

    rows: list[dict[str, Any]] = []
    longest = 0.0
    evaluations = 0

    def time_left() -> bool:
        return not args.deadline_s or time.monotonic() - began + longest <= args.deadline_s

    for task in ids:
        row: dict[str, Any] = {"task": task, "format": tasks[task]["format"]}
        rows.append(row)
        if tasks[task].get("error"):
            row.update(status="cannot be loaded", note=str(tasks[task]["error"])[:300])
            print(f"{task}  cannot be loaded: {row['note']}", flush=True)
            continue
        if not time_left():
            row.update(status="not run", note="the deadline")
            continue
        work = args.out / "reports" / task.replace("/", "__")
        right_dir, wrong_dir = work / "submission", work / "wrong"
        init = kcoral("init", task, str(right_dir), "--force", remote=args.remote)
        if init.returncode != 0:
            row.update(status="init failed", note=(init.stderr.strip().splitlines() or [""])[-1][:300])
            print(f"{task}  init failed: {row['note']}", flush=True)
            continue
        (submission,) = [p for p in right_dir.glob("*.py")]
        for side, folder, expect in (("right", right_dir, "PASS"), ("wrong", wrong_dir, "FAIL")):
            if side == "wrong":
                if not time_left():
                    row["wrong"] = {"verdict": "not run", "reason": "the deadline", "seconds": 0.0}
                    break
                wrong_dir.mkdir(parents=True, exist_ok=True)
                (wrong_dir / submission.name).write_text(wrong_submission(submission.read_text(), row["format"]))
            result = evaluate(task, folder, work / f"out-{side}", args.remote)
            result["start"] = "cold" if evaluations == 0 and not earlier else "warm"
            evaluations += 1
            longest = max(longest, result["seconds"])
            row[side] = result
            print(line(task, expect, result), flush=True)
        row["status"] = "run"

    ran = [r for r in rows if r.get("right")]
    summary = {
        "problems": len(rows),
        "run": len(ran),
        "template_pass": sum(1 for r in ran if r["right"]["verdict"] == "PASS"),
        "template_interval_holds_1": sum(1 for r in ran if r["right"].get("contains_1")),
        "wrong_fail_with_reason": sum(1 for r in ran if judge_wrong(r)),
        "all_as_expected": sum(1 for r in ran if judge_right(r) and judge_wrong(r)),
        "wall_s": round(time.monotonic() - began, 1),
        "shard": args.shard,
    }
    seconds = sorted(e["seconds"] for r in ran for e in (r["right"], r.get("wrong") or {}) if e.get("seconds"))
    if seconds:
        summary["eval_seconds_median"] = seconds[len(seconds) // 2]
    markdown = table(rows) + "\n" + json.dumps(summary) + "\n"
    (args.out / "packs.md").write_text(markdown)
    (args.out / "packs.json").write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
    print("\n" + markdown, flush=True)
    return 0 if summary["all_as_expected"] == summary["problems"] else 1


if __name__ == "__main__":
    sys.exit(main())
