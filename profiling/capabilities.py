"""What profiling this server can do: ncu (and whether the driver lets non-admins read counters), run-iket,
compute-sanitizer, the timeline (torch.profiler in the jobs' Python), Proton (triton.profiler, likewise).

``probe()`` looks at the host, which is what jobs see in toolchain mode (the host's /usr, /opt...
are mounted into the job). Results are cached for the process; ``probe(refresh=True)`` looks again.
In image mode ncu and iket jobs run in their own images (images/profilers.py), sanitizer jobs in the
ncu image (compute-sanitizer on its PATH), timeline and proton jobs in the job image: ``for_server()``
then asks whether those images are present (each time: an operator may build one later).
The server's /health includes ``for_server(...)`` under ``"profiling"``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kcoral.profiling.ncu_summary import find_ncu, module_dirs

if TYPE_CHECKING:
    from kcoral.runner.settings import Settings

PARAMS_FILE = "/proc/driver/nvidia/params"
#: the PATH jobs run with (kcoral.protocol.jobenv.BASE_JOB_ENV); run-iket may also sit next to the job's python
JOB_PATH = "/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

_lock = threading.Lock()
_cache: dict[tuple[str | None, str | None], dict[str, Any]] = {}


def counters_restricted(params_file: str = PARAMS_FILE) -> bool | None:
    """``RmProfilingAdminOnly`` of the NVIDIA driver: True/False, or None when unknown (no driver)."""
    try:
        with open(params_file, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = re.match(r"\s*RmProfilingAdminOnly\s*:\s*(\d+)", line)
                if m:
                    return m.group(1) != "0"
    except OSError:
        return None
    return None


#: where the CUDA toolkit keeps compute-sanitizer when its bin/ has no link to it
SANITIZER_FALLBACK = "/usr/local/cuda/compute-sanitizer/compute-sanitizer"


def tool_version(tool: str) -> str | None:
    """What ``TOOL --version`` says after "Version" (ncu's and compute-sanitizer's banners alike)."""
    try:
        out = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"Version\s+([\w.\-() ]+)", out)
    if m:
        return m.group(1).strip()
    lines = out.strip().splitlines()
    return lines[-1] if lines else None


ncu_version = tool_version


def find_sanitizer(path: str = JOB_PATH, fallback: str = SANITIZER_FALLBACK) -> str | None:
    """compute-sanitizer on the job PATH, or in the CUDA toolkit's own folder."""
    found = shutil.which("compute-sanitizer", path=path)
    if found:
        return found
    return fallback if os.access(fallback, os.X_OK) else None


def find_run_iket(python: str | None = None, path: str = JOB_PATH) -> str | None:
    """run-iket on the job PATH, or next to the job's interpreter (a virtual environment's bin/)."""
    found = shutil.which("run-iket", path=path)
    if found:
        return found
    if python:
        interpreter = python if os.path.isabs(python) else shutil.which(python, path=path)
        if interpreter:
            candidate = os.path.join(os.path.dirname(interpreter), "run-iket")
            if os.access(candidate, os.X_OK):
                return candidate
    return None


#: what the job's Python says about its torch (kcoral timeline's recorder): one line of JSON
TORCH_PROBE = (
    "import json, torch, torch.autograd; print(json.dumps({'torch': torch.__version__, "
    "'cuda': torch.version.cuda, 'kineto': bool(torch.autograd.kineto_available())}))"
)


def timeline_info(python: str | None) -> dict[str, Any]:
    """Whether the job's Python can record a timeline: torch, a CUDA build, with Kineto (CUPTI)."""
    python = python or "python3"
    info: dict[str, Any] = {"path": python, "version": None, "ok": False, "reason": ""}
    try:
        done = subprocess.run([python, "-c", TORCH_PROBE], capture_output=True, text=True, timeout=120)
        found = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        found = None
    if not isinstance(found, dict):
        info["reason"] = f"the jobs' Python ({python}) cannot import torch: kcoral timeline records with torch.profiler"
        return info
    info["version"] = f"torch {found.get('torch')}" + (f", CUDA {found['cuda']}" if found.get("cuda") else "")
    if not found.get("cuda"):
        info["reason"] = f"the jobs' torch ({found.get('torch')}) is a CPU-only build: it records no GPU activity"
    elif not found.get("kineto"):
        info["reason"] = f"the jobs' torch ({found.get('torch')}) was built without Kineto (CUPTI)"
    else:
        info["ok"] = True
    return info


#: what the job's python says of its Proton: one JSON line (triton's version, or why there is no Proton)
PROTON_PROBE = (
    "import json\n"
    "try:\n"
    "    import triton\n"
    "    import triton.profiler as p, triton.profiler.language as pl\n"
    "    ok = hasattr(p, 'mode') and hasattr(pl, 'enter_scope')\n"
    "    print(json.dumps({'version': triton.__version__, 'ok': ok, 'reason': '' if ok else "
    "'triton ' + triton.__version__ + ' has no Proton instrumentation mode (proton.mode, pl.enter_scope)'}))\n"
    "except Exception as e:\n"
    "    print(json.dumps({'version': None, 'ok': False, 'reason': 'no Proton (triton.profiler): ' + str(e)[:200]}))\n"
)


def proton_facts(python: str | None, path: str = JOB_PATH) -> dict[str, Any]:
    """``{path, version, ok, reason}`` of Proton in the job's interpreter ``python`` (its triton's version)."""
    interpreter = (python if python and os.path.isabs(python) else shutil.which(python or "python3", path=path)) or None
    info: dict[str, Any] = {"path": interpreter, "version": None, "ok": False, "reason": ""}
    if interpreter is None:
        info["reason"] = f"the jobs' python ({python}) is not on this server"
        return info
    try:
        out = subprocess.run([interpreter, "-c", PROTON_PROBE], capture_output=True, text=True, timeout=60).stdout
        said = json.loads(out.strip().splitlines()[-1])
        info.update(version=said["version"], ok=bool(said["ok"]), reason=str(said["reason"]))
    except (OSError, subprocess.SubprocessError, ValueError, KeyError, IndexError, TypeError):
        info["reason"] = f"{interpreter} did not say whether it has triton's Proton"
    return info


NO_SANITIZER = "compute-sanitizer (part of the CUDA toolkit) is not installed on this server"
RESTRICTED = (
    "the NVIDIA driver restricts GPU performance counters to admins (RmProfilingAdminOnly=1): ncu "
    "would fail with ERR_NVGPUCTRPERM; the operator must set NVreg_RestrictProfilingToAdminUsers=0"
)


def _probe(python: str | None, ncu: str | None, params_file: str) -> dict[str, Any]:
    ncu_path = find_ncu(ncu)
    restricted = counters_restricted(params_file)
    ncu_info: dict[str, Any] = {"path": ncu_path, "version": None, "ncu_report": None, "ok": False, "reason": ""}
    if ncu_path is None:
        ncu_info["reason"] = "Nsight Compute (ncu) is not installed on this server"
    else:
        ncu_info["version"] = ncu_version(ncu_path)
        dirs = module_dirs(ncu_path)
        ncu_info["ncu_report"] = dirs[0] if dirs else None
        if restricted:
            ncu_info["reason"] = RESTRICTED
        else:
            ncu_info["ok"] = True
    iket_path = find_run_iket(python)
    iket_info = {
        "path": iket_path,
        "ok": iket_path is not None,
        "reason": "" if iket_path else "run-iket (nvidia-cutlass-dsl >= 4.6) is not installed on this server",
    }
    sanitizer_path = find_sanitizer()
    sanitizer_info = {
        "path": sanitizer_path,
        "version": tool_version(sanitizer_path) if sanitizer_path else None,
        "ok": sanitizer_path is not None,
        "reason": "" if sanitizer_path else NO_SANITIZER,
    }
    return {
        "source": "host",
        "counters_restricted": restricted,
        "ncu": ncu_info,
        "iket": iket_info,
        "sanitizer": sanitizer_info,
        "timeline": timeline_info(python),
        "proton": proton_facts(python),
    }


def probe(
    python: str | None = None, *, ncu: str | None = None, params_file: str = PARAMS_FILE, refresh: bool = False
) -> dict[str, Any]:
    """``{"counters_restricted": bool|None, "ncu": {path, version, ncu_report, ok, reason},
    "iket": {path, ok, reason}, "sanitizer": {path, version, ok, reason}, "timeline" and "proton":
    {path, version, ok, reason}}``; ``python`` is the job's interpreter (settings.python)."""
    key = (python, ncu)
    with _lock:
        if refresh or key not in _cache or params_file != PARAMS_FILE:
            result = _probe(python, ncu, params_file)
            if params_file != PARAMS_FILE:
                return result
            _cache[key] = result
        return _cache[key]


#: the tool each profiler image puts on the jobs' PATH (compute-sanitizer: the ncu image's)
IMAGE_TOOLS = {
    "ncu": "ncu",
    "iket": "run-iket",
    "sanitizer": "compute-sanitizer",
    "timeline": "python3",
    "proton": "python3",
}
#: the kinds that run in another kind's image
SHARED_IMAGES = {"sanitizer": "ncu"}
#: the kinds that run in the jobs' own image (settings.image), with what they need there
JOB_IMAGE_KINDS = {
    "timeline": "torch (a CUDA build) must be importable by the jobs' python in {ref} (not checked)",
    "proton": "triton.profiler must be importable in {ref} (not checked here: a job says so in one line)",
}


def profiler_image(settings: Settings, kind: str) -> str:
    """The image a ``kind`` job runs in: the toolchain image in toolchain mode, else the profiler's own."""
    if settings.toolchain_mounts or kind in JOB_IMAGE_KINDS:
        return settings.image
    return settings.iket_image if kind == "iket" else settings.ncu_image


def tool_path(settings: Settings, kind: str) -> str:
    """The tool a ``kind`` job runs: the host's absolute path in toolchain mode, else the bare name
    the profiler image puts on the jobs' PATH (also the fallback when the host has none); a timeline's and a
    proton's is the jobs' Python."""
    if kind in JOB_IMAGE_KINDS:
        return settings.python
    if settings.toolchain_mounts:
        return probe(settings.python)[kind]["path"] or IMAGE_TOOLS.get(kind, settings.python)
    return IMAGE_TOOLS[kind]


def for_server(settings: Settings, has_image: Callable[[str], bool], params_file: str = PARAMS_FILE) -> dict[str, Any]:
    """What this server's jobs can run: the host's tools in toolchain mode (``probe``), else the
    profiler images (present or not). Same keys either way; ``source`` says which."""
    if settings.toolchain_mounts:
        return probe(settings.python, params_file=params_file)
    restricted = counters_restricted(params_file)
    out: dict[str, Any] = {"source": "images", "counters_restricted": restricted}
    present: dict[str, bool] = {}  # each image asked about once
    for kind in IMAGE_TOOLS:
        ref = profiler_image(settings, kind)
        info: dict[str, Any] = {"image": ref, "path": tool_path(settings, kind), "ok": False, "reason": ""}
        if ref not in present:
            present[ref] = has_image(ref)
        if not present[ref] and kind in JOB_IMAGE_KINDS:
            info["reason"] = f"the job image {ref} is not built on this server: kcoral images build"
        elif not present[ref]:
            built = SHARED_IMAGES.get(kind, kind)
            info["reason"] = (
                f"the {built} image {ref} is not built on this server: "
                f"kcoral images build {built} --base <the GPU job image>"
            )
        elif kind == "ncu" and restricted:
            info["reason"] = RESTRICTED
        else:
            info["ok"] = True
        if kind in SHARED_IMAGES:
            info["note"] = f"{IMAGE_TOOLS[kind]} must be on the PATH of {ref} (not checked here)"
        if kind in JOB_IMAGE_KINDS:
            info["note"] = JOB_IMAGE_KINDS[kind].format(ref=ref)
        out[kind] = info
    return out
