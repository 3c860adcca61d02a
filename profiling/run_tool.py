"""In-container driver of profiling jobs (stdlib only; kcoral's code is mounted at /kcoral).

    python -m kcoral.profiling.run_tool ncu --report R --summary S -- ncu ...
    python -m kcoral.profiling.run_tool iket --stage DIR --out OUT -- run-iket --output-dir DIR ...
    python -m kcoral.profiling.run_tool sanitizer --text T --xml X -- compute-sanitizer ...

Runs the tool with the job's stdout/stderr, then the follow-up (the ncu summary; moving run-iket's
files from its stage directory up into OUT; counting compute-sanitizer's errors) and exits with the
tool's own exit code (128+N when it died of signal N). A failing follow-up is reported on stderr and
never changes the exit code, except that a sanitizer job whose reports count errors exits with
profiling.sanitizer_findings.ERRORS_EXIT, whatever the application's own exit code (an out-of-bounds access
usually makes the application fail too).
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


#: the most of the text report copied into the job's log (all of it is in the report file)
ECHO_BYTES = 64 << 10


def _echo(path: str) -> None:
    """The start of the text report on stderr, so that the job's log shows what the tool said."""
    try:
        with open(path, "rb") as f:
            data = f.read(ECHO_BYTES + 1)
    except OSError:
        return
    sys.stderr.write(data[:ECHO_BYTES].decode("utf-8", errors="replace"))
    if len(data) > ECHO_BYTES:
        sys.stderr.write(f"\n[the rest of the report is in {os.path.basename(path)}]\n")
    sys.stderr.flush()


def count_errors(text: str, xml: str) -> int | None:
    """The errors compute-sanitizer counted: the text report's ERROR SUMMARY, else the XML's error records;
    None when neither report can be read."""
    from kcoral.profiling.sanitizer_findings import ReportError
    from kcoral.profiling.sanitizer_report import load

    for path in (text, xml):
        if not os.path.exists(path):
            continue
        try:
            return load(path).errors
        except ReportError as exc:
            _say(f"cannot read {os.path.basename(path)}: {exc}")
    return None


def run_sanitizer(text: str, xml: str, argv: list[str]) -> int:
    from kcoral.profiling.sanitizer_findings import ERRORS_EXIT

    code = _run(argv)
    _echo(text)
    try:
        errors = count_errors(text, xml)
    except Exception as exc:  # the reports are what matter; the count is a convenience
        _say(f"could not count the errors of the reports: {type(exc).__name__}: {exc}")
        return code
    if errors is None:
        _say(f"compute-sanitizer wrote no report (exit code {code})")
    elif errors:
        _say(f"compute-sanitizer reported {errors} error(s) (exit code {code}): the job exits with {ERRORS_EXIT}")
        return ERRORS_EXIT
    return code


def main(args: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if args is None else args)
    if "--" not in args:
        _say("usage: python -m kcoral.profiling.run_tool ncu|iket|sanitizer [options] -- TOOL ARGS...")
        return 2
    at = args.index("--")
    own, tool = args[:at], args[at + 1 :]
    parser = argparse.ArgumentParser(prog="kcoral.profiling.run_tool")
    parser.add_argument("kind", choices=["ncu", "iket", "sanitizer"])
    parser.add_argument("--report")
    parser.add_argument("--summary")
    parser.add_argument("--stage")
    parser.add_argument("--out")
    parser.add_argument("--text")
    parser.add_argument("--xml")
    ns = parser.parse_args(own)
    if not tool:
        _say("no tool command after --")
        return 2
    if ns.kind == "ncu":
        return run_ncu(ns.report, ns.summary, tool)
    if ns.kind == "sanitizer":
        return run_sanitizer(ns.text, ns.xml, tool)
    return run_iket(ns.stage, ns.out, tool)


if __name__ == "__main__":
    sys.exit(main())
