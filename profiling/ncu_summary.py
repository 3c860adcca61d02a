"""A small JSON summary of an Nsight Compute report, so an agent needs no local ncu.

    python -m kcoral.profiling.ncu_summary REPORT.ncu-rep --out SUMMARY.json [--ncu PATH]

Per profiled kernel: name, grid/block, duration (ns), memory throughput %, compute (SM)
throughput %, registers per thread, achieved occupancy %, and the rule advice. Read with
``ncu_report`` from the ncu install (``<ncu dir>/extras/python``); when that module cannot be
imported, from ``ncu --import REPORT --csv --page details``. Stdlib only: this runs inside the job
container with whatever Python the job image has.
"""

from __future__ import annotations

import argparse
import ast
import csv
import glob
import importlib
import io
import json
import os
import shutil
import subprocess
import sys
from typing import Any

DURATION = "gpu__time_duration.sum"
MEMORY = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
COMPUTE = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
REGISTERS = "launch__registers_per_thread"
OCCUPANCY = "sm__warps_active.avg.pct_of_peak_sustained_active"
GRID = "launch__grid_size"
BLOCK = "launch__block_size"

#: summary field -> (metric name, the label the details page shows, the unit that label must have)
FIELDS: dict[str, tuple[str, str, str | None]] = {
    "duration_ns": (DURATION, "Duration", None),
    "memory_throughput_pct": (MEMORY, "Memory Throughput", "%"),
    "compute_throughput_pct": (COMPUTE, "Compute (SM) Throughput", "%"),
    "registers_per_thread": (REGISTERS, "Registers Per Thread", None),
    "achieved_occupancy_pct": (OCCUPANCY, "Achieved Occupancy", "%"),
}
_TIME_UNITS = {
    "ns": 1.0,
    "nsecond": 1.0,
    "nanosecond": 1.0,
    "us": 1e3,
    "usecond": 1e3,
    "microsecond": 1e3,
    "ms": 1e6,
    "msecond": 1e6,
    "millisecond": 1e6,
    "s": 1e9,
    "second": 1e9,
}
NCU_CANDIDATES = ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu", "/usr/local/cuda*/bin/ncu")
MODULE_GLOBS = ("/opt/nvidia/nsight-compute/*/extras/python", "/usr/local/cuda*/nsight-compute*/extras/python")


class SummaryError(RuntimeError):
    """The report cannot be read here (no ncu_report module and no ncu binary, or ncu failed)."""


# --- finding ncu and ncu_report ---------------------------------------------------------------------


def _version_key(path: str) -> list[Any]:
    return [int(p) if p.isdigit() else p for p in path.replace("-", ".").replace("/", ".").split(".")]


def find_ncu(explicit: str | None = None) -> str | None:
    """The ncu binary: ``explicit``, ``$PATH``, then the usual install places (newest first)."""
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    found = shutil.which("ncu")
    if found:
        return found
    for pattern in NCU_CANDIDATES:
        for path in sorted(glob.glob(pattern), key=_version_key, reverse=True):
            if os.access(path, os.X_OK):
                return path
    return None


def module_dirs(ncu: str | None = None) -> list[str]:
    """Directories that may hold ``ncu_report.py``, best first."""
    dirs: list[str] = []
    ncu = ncu or find_ncu()
    if ncu:
        real = os.path.realpath(ncu)
        base = os.path.dirname(real)
        dirs.append(os.path.join(base, "extras", "python"))
        # /usr/local/cuda/bin/ncu is often a script that starts <cuda>/nsight-compute-<ver>/ncu
        parent = os.path.dirname(base)
        dirs += sorted(
            glob.glob(os.path.join(parent, "nsight-compute*", "extras", "python")), key=_version_key, reverse=True
        )
    for pattern in MODULE_GLOBS:
        dirs += sorted(glob.glob(pattern), key=_version_key, reverse=True)
    seen: list[str] = []
    for d in dirs:
        if d not in seen and os.path.isfile(os.path.join(d, "ncu_report.py")):
            seen.append(d)
    return seen


def import_ncu_report(ncu: str | None = None) -> Any | None:
    """The ``ncu_report`` module, or None when it is not importable here."""
    try:
        return importlib.import_module("ncu_report")
    except ImportError:
        pass
    for d in module_dirs(ncu):
        sys.path.insert(0, d)
        try:
            return importlib.import_module("ncu_report")
        except Exception:  # a module for another Python, a missing shared library...
            sys.path.remove(d)
    return None


# --- small helpers ------------------------------------------------------------------------------------


def to_number(text: Any) -> float | None:
    if text is None:
        return None
    if isinstance(text, (int, float)):
        return float(text)
    cleaned = str(text).strip().replace(",", "")
    try:
        return float(cleaned)
    except ValueError:
        return None


def to_ns(value: float | None, unit: str | None) -> float | None:
    if value is None:
        return None
    return value * _TIME_UNITS.get((unit or "ns").strip().lower(), 1.0)


def _literal(value: Any) -> Any:
    """Rule fields arrive as dicts, or as their Python repr on some ncu versions."""
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError):
            return value
    return value


def advice_from_rule(rule: Any) -> dict[str, Any] | None:
    """One rule result (``rule_results_as_dicts`` entry) as {rule, title, type, message, speedup_pct}."""
    if not isinstance(rule, dict):
        text = str(rule).strip()
        return {"rule": None, "title": None, "type": None, "message": text, "speedup_pct": None} if text else None
    message = _literal(rule.get("rule_message"))
    title = kind = None
    if isinstance(message, dict):
        title, kind, message = message.get("title"), message.get("type"), message.get("message")
    message = message or rule.get("message_for_display") or rule.get("message") or rule.get("description")
    if not message:
        return None
    speedup = _literal(rule.get("speedup_estimation"))
    pct = speedup.get("speedup") if isinstance(speedup, dict) else rule.get("estimated_speedup_pct")
    return {
        "rule": rule.get("rule_identifier") or rule.get("rule_name") or rule.get("name"),
        "title": title,
        "type": None if kind is None else str(kind),
        "message": str(message).strip(),
        "speedup_pct": to_number(pct),
    }


def _sorted_advice(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(items, key=lambda a: -(a.get("speedup_pct") or 0.0))


# --- ncu_report -----------------------------------------------------------------------------------------


def _metric(action: Any, name: str) -> tuple[Any, str | None]:
    try:
        metric = action.metric_by_name(name)
    except Exception:
        metric = None
    if metric is None:
        return None, None
    try:
        value = metric.value()
    except Exception:
        try:
            value = metric.as_double()
        except Exception:
            value = None
    try:
        unit = metric.unit()
    except Exception:
        unit = None
    return value, unit


def _action_name(module: Any, action: Any) -> str:
    try:
        return str(action.name(module.IAction.NameBase_DEMANGLED))
    except Exception:
        return str(action.name())


def kernel_from_action(module: Any, action: Any, index: int) -> dict[str, Any]:
    kernel: dict[str, Any] = {"id": index, "name": _action_name(module, action)}
    for key, name in (("grid", GRID), ("block", BLOCK)):
        value, _ = _metric(action, name)
        kernel[key] = value if isinstance(value, (int, float, str)) or value is None else str(value)
    for field, (metric, _label, _unit) in FIELDS.items():
        value, unit = _metric(action, metric)
        number = to_number(value)
        kernel[field] = to_ns(number, unit) if field == "duration_ns" else number
    advice: list[dict[str, Any]] = []
    try:
        rules = action.rule_results_as_dicts()
    except Exception:
        rules = []
    for rule in rules or []:
        item = advice_from_rule(rule)
        if item:
            advice.append(item)
    kernel["advice"] = _sorted_advice(advice)
    return kernel


def summarize_with_module(module: Any, report: str) -> list[dict[str, Any]]:
    context = module.load_report(report)
    kernels: list[dict[str, Any]] = []
    for r in range(context.num_ranges()):
        rng = context.range_by_idx(r)
        for a in range(rng.num_actions()):
            kernels.append(kernel_from_action(module, rng.action_by_idx(a), len(kernels)))
    return kernels


# --- CSV fallback ---------------------------------------------------------------------------------------


def parse_details_csv(text: str) -> list[dict[str, Any]]:
    """Kernels from ``ncu --import R --csv --page details`` (lines before the header are skipped)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        return []
    kernels: dict[str, dict[str, Any]] = {}
    wanted = {label: (field, unit) for field, (_m, label, unit) in FIELDS.items()}
    by_metric = {metric: (field, unit) for field, (metric, _l, unit) in FIELDS.items()}
    for row in csv.DictReader(io.StringIO("\n".join(lines[start:]))):
        key = row.get("ID") or "0"
        kernel = kernels.get(key)
        if kernel is None:
            kernel = {
                "id": len(kernels),
                "name": row.get("Kernel Name", ""),
                "grid": row.get("Grid Size") or None,
                "block": row.get("Block Size") or None,
                **{f: None for f in FIELDS},
                "advice": [],
            }
            kernels[key] = kernel
        label = (row.get("Metric Name") or "").strip()
        unit = (row.get("Metric Unit") or "").strip()
        hit = wanted.get(label) or by_metric.get(label)
        if hit and kernel[hit[0]] is None and (hit[1] is None or unit == hit[1]):
            number = to_number(row.get("Metric Value"))
            kernel[hit[0]] = to_ns(number, unit) if hit[0] == "duration_ns" else number
        description = (row.get("Rule Description") or "").strip()
        if description:
            item = {
                "rule": row.get("Rule Name") or None,
                "title": None,
                "type": row.get("Rule Type") or None,
                "message": description,
                "speedup_pct": to_number(row.get("Estimated Speedup")),
            }
            if item not in kernel["advice"]:
                kernel["advice"].append(item)
    out = list(kernels.values())
    for kernel in out:
        kernel["advice"] = _sorted_advice(kernel["advice"])
    return out


def summarize_with_csv(report: str, ncu: str) -> list[dict[str, Any]]:
    proc = subprocess.run(
        [ncu, "--import", report, "--csv", "--page", "details"],
        capture_output=True,
        text=True,
        errors="replace",
        timeout=600,
    )
    if proc.returncode != 0:
        raise SummaryError(f"ncu --import failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    return parse_details_csv(proc.stdout)


# --- the summary ----------------------------------------------------------------------------------------


def summarize(report: str, ncu: str | None = None) -> dict[str, Any]:
    """The summary document of ``report``; SummaryError when nothing here can read it."""
    doc: dict[str, Any] = {"report": os.path.basename(report), "source": None, "kernels": [], "errors": []}
    module = import_ncu_report(ncu)
    if module is not None:
        try:
            doc["kernels"] = summarize_with_module(module, report)
            doc["source"] = "ncu_report"
            return doc
        except Exception as exc:
            doc["errors"].append(f"ncu_report: {type(exc).__name__}: {exc}")
    binary = find_ncu(ncu)
    if binary is None:
        raise SummaryError(
            "neither the ncu_report module nor an ncu binary was found: install Nsight Compute "
            "or read the summary JSON the server returned with the report"
        )
    doc["kernels"] = summarize_with_csv(report, binary)
    doc["source"] = "csv"
    return doc


def write_summary(report: str, out: str, ncu: str | None = None) -> dict[str, Any]:
    """Summarise ``report`` into ``out`` (a document with an error when there is no report)."""
    if not os.path.exists(report):
        doc: dict[str, Any] = {
            "report": os.path.basename(report),
            "source": None,
            "kernels": [],
            "errors": [
                "no report: ncu profiled no kernel (check --kernel-name, "
                "--launch-skip, --launch-count) or the command failed"
            ],
        }
    else:
        try:
            doc = summarize(report, ncu)
        except Exception as exc:
            doc = {
                "report": os.path.basename(report),
                "source": None,
                "kernels": [],
                "errors": [f"{type(exc).__name__}: {exc}"],
            }
    with open(out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
    return doc


def _fmt(value: Any, spec: str, suffix: str = "") -> str:
    return "-" if value is None else f"{value:{spec}}{suffix}"


def format_kernel_lines(doc: dict[str, Any], advice: int = 3) -> list[str]:
    """Human-readable key lines per kernel."""
    lines: list[str] = []
    for k in doc.get("kernels", []):
        dur = k.get("duration_ns")
        dur_text = "-" if dur is None else (f"{dur / 1e3:.2f} us" if dur >= 1e3 else f"{dur:.0f} ns")
        lines.append(f"[{k.get('id')}] {k.get('name')}  grid {k.get('grid') or '-'} block {k.get('block') or '-'}")
        lines.append(
            f"    duration {dur_text}  memory {_fmt(k.get('memory_throughput_pct'), '.1f', '%')}  "
            f"compute(SM) {_fmt(k.get('compute_throughput_pct'), '.1f', '%')}  "
            f"registers {_fmt(k.get('registers_per_thread'), '.0f')}  "
            f"occupancy {_fmt(k.get('achieved_occupancy_pct'), '.1f', '%')}"
        )
        for item in [a for a in k.get("advice", []) if a.get("type") not in ("INF", "0")][:advice]:
            head = item.get("title") or item.get("rule") or "advice"
            speed = f" (est. speedup {item['speedup_pct']:.1f}%)" if item.get("speedup_pct") else ""
            text = " ".join(str(item.get("message", "")).split())
            lines.append(f"    - {head}{speed}: {text[:300]}")
    for err in doc.get("errors", []):
        lines.append(f"note: {err}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kcoral.profiling.ncu_summary", description=__doc__.split("\n")[0])
    parser.add_argument("report")
    parser.add_argument("--out", help="write the JSON summary here (default: print it)")
    parser.add_argument("--ncu", help="the ncu binary (default: found on PATH or in the usual places)")
    ns = parser.parse_args(argv)
    if ns.out:
        doc = write_summary(ns.report, ns.out, ns.ncu)
        print("\n".join(format_kernel_lines(doc)))
        return 0 if doc.get("kernels") else 1
    try:
        doc = summarize(ns.report, ns.ncu)
    except SummaryError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    print(json.dumps(doc, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
