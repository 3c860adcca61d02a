"""``python -m tasks.harness.candidate TASK_DIR CASES_JSON OUT_DIR`` (in the candidate's container).

For every case, in the order given: make the inputs from the recipe, NaN-poison the outputs, call
the submission, check the outputs' layout, save them for the judge (OUT/<case>.pt). A timed case
is then timed against the baseline (tasks.harness.timing) and the candidate is called once more
on the original inputs (OUT/<case>.post.pt). OUT/results.json holds timing *claims* and errors:
the judge never trusts it for correctness, and the server bounds its timings.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import torch

from tasks.harness import casefile, checks, samples, timing
from tasks.harness.taskdef import load_task

_SNAPSHOT = {
    "time.perf_counter_ns": time.perf_counter_ns,
    "time.monotonic": time.monotonic,
    "torch.cuda.Event": torch.cuda.Event,
    "torch.cuda.synchronize": torch.cuda.synchronize,
    "timing.interleaved": timing.interleaved,
    "timing.Timer.__call__": timing.Timer.__call__,
    "checks.compare": checks.compare,
    "torch.save": torch.save,
}


def _current() -> dict[str, Any]:
    return {
        "time.perf_counter_ns": time.perf_counter_ns,
        "time.monotonic": time.monotonic,
        "torch.cuda.Event": torch.cuda.Event,
        "torch.cuda.synchronize": torch.cuda.synchronize,
        "timing.interleaved": timing.interleaved,
        "timing.Timer.__call__": timing.Timer.__call__,
        "checks.compare": checks.compare,
        "torch.save": torch.save,
    }


def tampered() -> list[str]:
    """Names of harness functions the candidate replaced since start-up."""
    now = _current()
    return [name for name, fn in _SNAPSHOT.items() if now[name] is not fn]


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _save(path: Path, tensors: dict[str, torch.Tensor]) -> None:
    torch.save({k: v.detach().cpu() for k, v in tensors.items()}, path)


def run_case(mod: Any, solution: Any, case: dict[str, Any], device: str, out: Path, cfg: timing.TimingConfig,
             tol: checks.Tolerance, timer: timing.Timer | None) -> dict[str, Any]:
    params, seed = case["params"], case["seed"]
    inputs = mod.make_inputs(params, seed, device)
    specs = mod.output_specs(inputs)
    outs = mod.make_outputs(inputs, device)
    samples.poison(outs)
    data = {**inputs, **outs}
    fn = mod.candidate(solution, data)
    fn()
    _sync(device)
    for name, (shape, dtype) in specs.items():
        problem = checks.layout_problem(name, outs[name], shape, getattr(torch, dtype), device)
        if problem:
            return {"error": problem}
        if data.get(name) is not outs[name]:
            return {"error": f"{name}: the submission replaced the output buffer instead of writing into it"}
    _save(out / f"{case['id']}.pt", outs)
    result: dict[str, Any] = {"ok": True}
    if case.get("timed") and timer is not None:
        base_outs = mod.make_outputs(inputs, device)
        base_fn = mod.baseline({**inputs, **base_outs})

        refill = samples.refiller(mod, params, case.get("samples", seed), inputs, device)

        def poison() -> None:
            samples.poison(outs)
            samples.poison(base_outs)

        def check() -> str | None:
            for name in specs:
                problem, _ = checks.compare(name, outs[name], base_outs[name], tol)
                if problem:
                    return problem
            return None

        timed = timing.interleaved(timer, base_fn, fn, refill, poison, check, cfg)
        result.update(baseline_ms=timed.baseline_ms, kernel_ms=timed.kernel_ms, mismatch=timed.mismatch,
                      warmup_calls=timed.warmup_calls, stopped_by=timed.stopped_by)
        fresh = mod.make_inputs(params, seed, device)
        for key, tensor in inputs.items():
            if isinstance(tensor, torch.Tensor):
                tensor.copy_(fresh[key])
        samples.poison(outs)
        fn()
        _sync(device)
        _save(out / f"{case['id']}.post.pt", outs)
    return result


def _seed_kernel_cache() -> None:
    """Copy the judge's compiled kernels (read-only mount) into this container's private cache."""
    seed, target = os.environ.get("KCORAL_SEED_CACHE"), os.environ.get("TRITON_CACHE_DIR")
    if seed and target and os.path.isdir(os.path.join(seed, "triton")):
        shutil.copytree(os.path.join(seed, "triton"), target, dirs_exist_ok=True)


def main(argv: list[str]) -> int:
    task_dir, cases_path, out = Path(argv[0]), Path(argv[1]), Path(argv[2])
    _seed_kernel_cache()
    task = load_task(task_dir)
    doc = casefile.read(cases_path)
    mod = task.module()
    device = task.device
    cfg = timing.TimingConfig.from_manifest(task.manifest.get("timing", {}))
    tol = checks.Tolerance(**task.manifest["tolerance"])
    results: dict[str, Any] = {"cases": {}, "tampered": []}
    torch.manual_seed(0)
    # Last on the path (and the interpreter runs with -P): the submission cannot shadow torch or the harness.
    sys.path.append(os.getcwd())
    try:
        import solution  # noqa: PLC0415 - the submission, imported after the harness captured its clocks
    except BaseException as exc:  # noqa: BLE001 - any failure to import is the submission's error
        message = f"importing solution.py failed: {type(exc).__name__}: {exc}"
        results["cases"] = {c["id"]: {"error": message} for c in doc["cases"]}
        (out / "results.json").write_text(json.dumps(results))
        print(message, file=sys.stderr)
        return 0
    timer = timing.Timer(device, cfg.flush_bytes) if any(c.get("timed") for c in doc["cases"]) else None
    for case in doc["cases"]:
        try:
            results["cases"][case["id"]] = run_case(mod, solution, case, device, out, cfg, tol, timer)
        except BaseException as exc:  # noqa: BLE001 - the submission's failure, recorded as ERROR
            tail = traceback.format_exc(limit=-3)
            results["cases"][case["id"]] = {"error": f"{type(exc).__name__}: {exc}"[:2000], "trace": tail[-2000:]}
        results["tampered"] = tampered()
    (out / "results.json").write_text(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
