"""The kcoral manifest of a problem's task (tasks.harness.taskdef reads it as any task's).

Its ``pack`` entry says where the problem's code is and how it is adapted: ``format``, ``entry`` (the
file that defines the problem, in the task's root), ``files`` (what the problem may read, relative
to the root's parent) and, for GPU MODE, the task.yml's cases. The manifest is all a container
needs: the job image has no YAML, so task.yml is read on the server, here, once.

A pack's settings: the nearest ``kcoral-pack.json`` in the problem's folder or above it (up to the
tasks directory) sets ``device`` (default cuda), ``tolerance``, ``timeout_s``, ``timing``,
``holdout`` (probes per request) and ``gpu_types`` (the GPU types its problems run on, as
``kcoral gpus`` names them: ["B200"] for a Blackwell-only pack; the server refuses to evaluate them
elsewhere and lists them with the reason) for every problem below it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from kcoral.protocol.models import GPU_TYPE
from kcoral.tasks.cases import timing_method
from kcoral.tasks.harness.schema import TimingMethod
from kcoral.tasks.packs.recognise import KERNELBENCH, Problem

PACK_SETTINGS = "kcoral-pack.json"
SETTINGS_KEYS = frozenset({"device", "tolerance", "timeout_s", "timing", "holdout", "gpu_types"})
#: the most GPU types a pack may name
MAX_GPU_TYPES = 16
#: KernelBench's own rule: torch.allclose(out, ref, atol=1e-2, rtol=1e-2)
KERNELBENCH_TOLERANCE = {"atol": 1e-2, "rtol": 1e-2, "allclose": 1.0}
DEFAULT_TIMEOUT_S = 600.0
#: holdout probes per request: fresh draws of the problem's own inputs under seeds drawn from the secret
DEFAULT_HOLDOUT = 2
MAX_HOLDOUT = 50
#: what a pack's ``tolerance`` may set (tasks.harness.checks.Tolerance); KernelBench's rule keeps what it
#: does not set, a GPU MODE problem's own check_implementation judges whatever it says
TOLERANCE_KEYS = frozenset({"atol", "rtol", "rms", "allclose"})
#: KernelBench's checked draws besides the timed one (KernelBench itself checks five)
KERNELBENCH_DRAWS = ("standard", "draw2", "draw3")
KERNELBENCH_CONTRACT = (
    "solution.py defines class ModelNew(nn.Module) with Model's constructor and forward (the problem file's "
    "own contract): ModelNew(*get_init_inputs()) is built under the problem's seed and must hold Model's parameters "
    "and buffers (same names, dtypes, shapes and values: checked before any call), and forward(*get_inputs()) "
    "must return what Model's returns (same shapes and dtypes, on the task's device)"
)
GPUMODE_CONTRACT = (
    "submission.py defines custom_kernel(data) returning what the problem's ref_kernel(data) returns, for data "
    "from its generate_input(**spec) (the problem's own contract; task.py has its types)"
)


def pack_settings(folder: Path, top: Path) -> tuple[dict[str, Any], str]:
    """The nearest kcoral-pack.json from ``folder`` up to ``top``, checked; ({}, "") where there is none."""
    here = folder
    while True:
        path = here / PACK_SETTINGS
        if path.is_file():
            try:
                doc = json.loads(path.read_text())
            except (OSError, ValueError) as exc:
                return {}, f"{path.name} in {here.name}: not readable JSON ({exc})"
            if not isinstance(doc, dict) or not set(doc) <= SETTINGS_KEYS:
                return {}, f"{path.name} in {here.name}: an object of {sorted(SETTINGS_KEYS)} only"
            problem = settings_problem(doc)
            return ({}, f"{path.name} in {here.name}: {problem}") if problem else (doc, "")
        if here == top or here.parent == here:
            return {}, ""
        here = here.parent


def settings_problem(doc: dict[str, Any]) -> str:
    """What is wrong with a kcoral-pack.json's values ("" when nothing): each one is checked as the
    server reads the file, so a bad value makes the pack's problems unloadable with the reason instead
    of failing their evaluations (or the listing) later."""
    if doc.get("device", "cuda") not in ("cuda", "cpu"):
        return "device is cuda or cpu"
    if "timeout_s" in doc and not (_number(doc["timeout_s"]) and doc["timeout_s"] > 0):
        return "timeout_s is a number of seconds over 0"
    if "holdout" in doc and not (type(doc["holdout"]) is int and 0 <= doc["holdout"] <= MAX_HOLDOUT):
        return f"holdout is a whole number of probes from 0 to {MAX_HOLDOUT}"
    types = doc.get("gpu_types", [])
    if not (
        isinstance(types, list)
        and len(types) <= MAX_GPU_TYPES
        and all(isinstance(t, str) and GPU_TYPE.fullmatch(t) and t.lower() != "any" for t in types)
    ):
        return f"gpu_types is a list of at most {MAX_GPU_TYPES} GPU types such as B200 (letters, digits, '.', '_', '-')"
    if types and doc.get("device", "cuda") != "cuda":
        return "gpu_types is for a pack whose device is cuda"
    tolerance = doc.get("tolerance", {})
    if not isinstance(tolerance, dict) or not set(tolerance) <= TOLERANCE_KEYS:
        return f"tolerance is an object of {sorted(TOLERANCE_KEYS)} only"
    if not all(_number(v) and v >= 0 for v in tolerance.values()):
        return "tolerance's values are numbers, 0 or more"
    if not isinstance(doc.get("timing", {}), dict):
        return "timing is an object of the timing method's settings"
    try:
        timing_method(TimingMethod(), {"timing": doc.get("timing", {}), "device": doc.get("device", "cuda")})
    except ValueError as exc:
        return str(exc).removeprefix("task ?: ")
    return ""


def _number(value: object) -> bool:
    return type(value) in (int, float) and math.isfinite(value)  # type: ignore[arg-type]


def problem_timeout(problem: Problem) -> float | None:
    """A GPU MODE problem's own time limit for a run that checks and times (its task.yml's
    ``ranked_timeout``, else ``test_timeout`` and ``benchmark_timeout`` together), in seconds; None where
    it gives none (a KernelBench problem never does): the pack's ``timeout_s`` then. The server's
    ``max_timeout_s`` caps either (tasks.evaluate)."""
    if problem.format == KERNELBENCH:
        return None
    timeouts = problem.spec.get("timeouts", {})
    if timeouts.get("ranked_timeout", 0) > 0:
        return float(timeouts["ranked_timeout"])
    parts = [timeouts.get(k, 0) for k in ("test_timeout", "benchmark_timeout")]
    return float(sum(parts)) if all(t > 0 for t in parts) else None


def manifest(problem: Problem, settings: dict[str, Any]) -> dict[str, Any]:
    """The task manifest of a loadable ``problem`` under its pack's ``settings``."""
    pack: dict[str, Any] = {"format": problem.format, "entry": problem.entry, "files": list(problem.files)}
    common = {
        "id": problem.id,
        "version": "",
        "device": settings.get("device", "cuda"),
        "timeout_s": problem_timeout(problem) or float(settings.get("timeout_s", DEFAULT_TIMEOUT_S)),
        "holdout": {"count": int(settings.get("holdout", DEFAULT_HOLDOUT))},
        **({"timing": settings["timing"]} if "timing" in settings else {}),
        **({"gpu_types": list(settings["gpu_types"])} if settings.get("gpu_types") else {}),
    }
    if problem.format == KERNELBENCH:
        what = f"KernelBench problem {problem.folder.name}/{problem.entry}"
        return {
            **common,
            "description": f"{what}: {problem.description}" if problem.description else what,
            "contract": KERNELBENCH_CONTRACT,
            "tolerance": {**KERNELBENCH_TOLERANCE, **settings.get("tolerance", {})},
            "workloads": [{"id": w, "params": {}, "timed": w == "standard"} for w in KERNELBENCH_DRAWS],
            "pack": {**pack, "rule": "allclose"},
        }
    spec = problem.spec
    tests = [{"id": f"test{i}", "params": dict(case)} for i, case in enumerate(spec["tests"])]
    benchmarks = [
        {"id": f"benchmark{i}", "params": {k: v for k, v in case.items() if k != "seed"}, "timed": True}
        for i, case in enumerate(spec["benchmarks"])
    ]
    what = f"GPU MODE problem {problem.folder.parent.name}/{problem.folder.name}"
    return {
        **common,
        "description": f"{what}: {problem.description}" if problem.description else what,
        "contract": GPUMODE_CONTRACT,
        "submission": "submission.py",
        # the problem's check_implementation judges; these are kept for a pack that names its own
        "tolerance": settings.get("tolerance", {}),
        "workloads": tests + benchmarks,
        "pack": {**pack, "rule": "check_implementation", "templates": spec.get("templates", {})},
    }
