"""In-container driver of profiling jobs (stdlib only; kcoral's code is mounted at /kcoral).

    python -m kcoral.profiling.run_tool ncu --report R --summary S -- ncu ...
    python -m kcoral.profiling.run_tool iket --stage DIR --out OUT -- run-iket --output-dir DIR ...

Runs the tool with the job's stdout/stderr, then the follow-up (the ncu summary; moving run-iket's
files from its stage directory up into OUT) and exits with the tool's own exit code (128+N when
it died of signal N). A failing follow-up is reported on stderr and never changes the exit code.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys


def _say(message: str) -> None:
    sys.stderr.write(f"kcoral: {message}\n")
    sys.stderr.flush()


def _run(argv: list[str]) -> int:
    home = os.environ.get("HOME")
    if home:  # ncu wants a writable HOME (section deployment); HOME lives on the job's tmpfs
        os.makedirs(home, exist_ok=True)
    sys.stdout.flush()
    try:
        code = subprocess.call(argv)
    except OSError as exc:
        _say(f"cannot run {argv[0]}: {exc}")
        return 127
    return 128 - code if code < 0 else code


def run_ncu(report: str, summary: str, argv: list[str]) -> int:
    code = _run(argv)
    try:
        from kcoral.profiling.ncu_summary import write_summary

        if not os.path.exists(report):
            _say(f"ncu wrote no report (exit code {code}): no kernel matched the filters, or the command failed")
        write_summary(report, summary)
    except Exception as exc:  # the report is what matters; the summary is a convenience
        _say(f"could not summarise the report: {type(exc).__name__}: {exc}")
    return code


def move_up(stage: str, out: str) -> int:
    """Move everything below ``stage`` into ``out`` keeping relative paths; returns the files moved."""
    moved = 0
    if not os.path.isdir(stage):
        return 0
    for root, _dirs, files in os.walk(stage):
        rel = os.path.relpath(root, stage)
        target_dir = out if rel == "." else os.path.join(out, rel)
        os.makedirs(target_dir, exist_ok=True)
        for name in files:
            target = os.path.join(target_dir, name)
            if os.path.lexists(target):
                target = os.path.join(target_dir, f"iket-{name}")
            os.replace(os.path.join(root, name), target)
            moved += 1
    shutil.rmtree(stage, ignore_errors=True)
    return moved


def run_iket(stage: str, out: str, argv: list[str]) -> int:
    code = _run(argv)
    try:
        moved = move_up(stage, out)
        if moved == 0:
            _say(f"run-iket wrote no files (exit code {code})")
    except OSError as exc:
        _say(f"could not move run-iket's files into {out}: {exc}")
    return code


def main(args: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if args is None else args)
    if "--" not in args:
        _say("usage: python -m kcoral.profiling.run_tool ncu|iket [options] -- TOOL ARGS...")
        return 2
    at = args.index("--")
    own, tool = args[:at], args[at + 1 :]
    parser = argparse.ArgumentParser(prog="kcoral.profiling.run_tool")
    parser.add_argument("kind", choices=["ncu", "iket"])
    parser.add_argument("--report")
    parser.add_argument("--summary")
    parser.add_argument("--stage")
    parser.add_argument("--out")
    ns = parser.parse_args(own)
    if not tool:
        _say("no tool command after --")
        return 2
    if ns.kind == "ncu":
        return run_ncu(ns.report, ns.summary, tool)
    return run_iket(ns.stage, ns.out, tool)


if __name__ == "__main__":
    sys.exit(main())
