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
import traceback
from pathlib import Path
from typing import Any

import torch

from tasks.harness import casefile, checks, integrity, samples, timing
from tasks.harness.integrity import Integrity
from tasks.harness.taskdef import load_task

#: back-to-back calls per side in the wall-clock batch the server times from outside (see _wall_batch)
WALL_MARK = b"##kcoral-wall"
_write = os.write
_exit = os._exit


def _mark(case_id: str, what: str) -> None:
    _write(1, WALL_MARK + f" {case_id} {what}\n".encode())


def _wall_batch(case_id: str, base_fn: Any, fn: Any, device: str, calls: int) -> None:
    """K baseline calls then K candidate calls, each group closed by a device-wide sync, between
    marker lines. The server stamps the markers as they arrive, with its own clock."""
    _sync(device)
    _mark(case_id, "B")
    for _ in range(calls):
        base_fn()
    _sync(device)
    _mark(case_id, "M")
    for _ in range(calls):
        fn()
    _sync(device)
    _mark(case_id, "E")


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _save(path: Path, tensors: dict[str, torch.Tensor]) -> None:
    torch.save({k: v.detach().cpu() for k, v in tensors.items()}, path)


def run_case(mod: Any, solution: Any, case: dict[str, Any], device: str, out: Path, cfg: timing.TimingConfig,
             tol: checks.Tolerance, timer: timing.Timer | None, guard: Integrity, wall_calls: int) -> dict[str, Any]:
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
            tampering = guard.problems()
            if tampering:
                return "tampering: " + "; ".join(tampering)
            for name in specs:
                problem, _ = checks.compare(name, outs[name], base_outs[name], tol)
                if problem:
                    return problem
            return None

        timed = timing.interleaved(timer, base_fn, fn, refill, poison, check, cfg)
        result.update(baseline_ms=timed.baseline_ms, kernel_ms=timed.kernel_ms, mismatch=timed.mismatch,
                      warmup_calls=timed.warmup_calls, stopped_by=timed.stopped_by, wall_calls=wall_calls)
        _wall_batch(case["id"], base_fn, fn, device, wall_calls)
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
    guard = Integrity([timing, checks, samples, casefile, integrity, sys.modules[__name__]])
    wall_calls = int(task.manifest.get("wall_calls", 20))
    torch.manual_seed(0)
    # Last on the path (and the interpreter runs with -P): the submission cannot shadow torch or the harness.
    sys.path.append(os.getcwd())
    try:
        import solution  # noqa: PLC0415 - the submission, imported after the harness captured its clocks
    except BaseException as exc:  # noqa: BLE001 - any failure to import is the submission's error
        message = f"importing solution.py failed: {type(exc).__name__}: {exc}"
        results["cases"] = {c["id"]: {"error": message} for c in doc["cases"]}
        print(message, file=sys.stderr)
        _finish(out, results)
    timer = timing.Timer(device, cfg.flush_bytes) if any(c.get("timed") for c in doc["cases"]) else None
    for case in doc["cases"]:
        try:
            results["cases"][case["id"]] = run_case(mod, solution, case, device, out, cfg, tol, timer, guard,
                                                    wall_calls)
        except BaseException as exc:  # noqa: BLE001 - the submission's failure, recorded as ERROR
            tail = traceback.format_exc(limit=-3)
            results["cases"][case["id"]] = {"error": f"{type(exc).__name__}: {exc}"[:2000], "trace": tail[-2000:]}
        results["tampered"] = sorted(set(results["tampered"]) | set(guard.problems()))
    _finish(out, results)
    return 0


def _finish(out: Path, results: dict[str, Any]) -> None:
    """Write the claims and leave at once: no atexit handler or finaliser of the submission runs after."""
    (out / "results.json").write_text(json.dumps(results))
    sys.stdout.flush()
    sys.stderr.flush()
    _exit(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
