"""``python -m tasks.harness.judge prepare|check TASK_DIR CASES_JSON JUDGE_DIR [CANDIDATE_OUT VERDICT_DIR]``.

Runs in containers that never hold candidate code. ``prepare`` writes the expected outputs of
every case (the task's reference; the fp64 oracle for exact probes) and times the baseline alone
(a trusted figure the server compares the candidate-side baseline with). ``check`` compares the
candidate's saved outputs with the expected ones and writes VERDICT_DIR/verdicts.json.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import torch

from tasks.harness import casefile, checks, samples, timing
from tasks.harness.taskdef import load_task


def prepare(task_dir: Path, cases_path: Path, judge: Path) -> None:
    task = load_task(task_dir)
    mod = task.module()
    doc = casefile.read(cases_path)
    device = task.device
    trusted: dict[str, list[float]] = {}
    specs: dict[str, dict[str, Any]] = {}
    cfg = timing.TimingConfig.from_manifest(task.manifest.get("timing", {}))
    for case in doc["cases"]:
        inputs = mod.make_inputs(case["params"], case["seed"], device)
        specs[case["id"]] = {name: [list(shape), dtype] for name, (shape, dtype) in mod.output_specs(inputs).items()}
        expected = mod.reference(inputs, case["params"])
        torch.save({k: v.detach().cpu() for k, v in expected.items()}, judge / f"{case['id']}.expected.pt")
        if case.get("timed"):
            trusted[case["id"]] = _trusted_baseline(mod, case, inputs, device, cfg)
    (judge / "trusted_baseline.json").write_text(json.dumps(trusted))
    (judge / "specs.json").write_text(json.dumps(specs))


def _trusted_baseline(mod: Any, case: dict[str, Any], inputs: dict[str, Any], device: str,
                      cfg: timing.TimingConfig) -> list[float]:
    """The baseline timed exactly as the candidate's harness times it (fresh inputs, poisoned outputs,
    flushed caches), against itself, in a process that holds no candidate code."""
    outs = mod.make_outputs(inputs, device)
    fn = mod.baseline({**inputs, **outs})
    refill = samples.refiller(mod, case["params"], case.get("samples", case["seed"]), inputs, device)
    result = timing.interleaved(timing.Timer(device, cfg.flush_bytes), fn, fn, refill,
                                lambda: samples.poison(outs), lambda: None, cfg)
    return result.baseline_ms + result.kernel_ms


def _load(path: Path) -> dict[str, torch.Tensor] | str:
    if not path.is_file() or path.is_symlink():
        return f"{path.name} is missing"
    try:
        loaded = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - a malformed file is the candidate's failure
        return f"{path.name} is unreadable: {type(exc).__name__}"
    if not isinstance(loaded, dict) or not all(isinstance(v, torch.Tensor) for v in loaded.values()):
        return f"{path.name} does not hold a dict of tensors"
    return loaded


def _compare_file(path: Path, expected: dict[str, torch.Tensor], spec: dict[str, Any], tol: checks.Tolerance,
                  device: str) -> tuple[str | None, dict[str, Any]]:
    got = _load(path)
    if isinstance(got, str):
        return got, {}
    stats: dict[str, Any] = {}
    for name, ref in expected.items():
        out = got.get(name)
        shape, dtype = spec[name]
        problem = checks.layout_problem(name, out, tuple(shape), getattr(torch, dtype), "cpu")
        if problem:
            return problem, stats
        problem, stats[name] = checks.compare(name, out.to(device), ref.to(device), tol)
        if problem:
            return problem, stats
    return None, stats


def check(task_dir: Path, cases_path: Path, judge: Path, cand: Path, out: Path) -> None:
    task = load_task(task_dir)
    doc = casefile.read(cases_path)
    device = task.device if task.device != "cuda" or torch.cuda.is_available() else "cpu"
    claims = _load_claims(cand / "results.json")
    specs = json.loads((judge / "specs.json").read_text())
    verdicts: dict[str, Any] = {}
    for case in doc["cases"]:
        cid = case["id"]
        tol = checks.Tolerance(**case["tolerance"])
        claim = claims.get(cid, {})
        expected = torch.load(judge / f"{cid}.expected.pt", map_location="cpu", weights_only=True)
        problem, stats = _compare_file(cand / f"{cid}.pt", expected, specs[cid], tol, device)
        verdict = "PASS"
        if problem:
            verdict = "ERROR" if claim.get("error") else "FAIL"
            problem = claim.get("error") or problem
        elif case.get("timed"):
            post, _ = _compare_file(cand / f"{cid}.post.pt", expected, specs[cid], tol, device)
            flaky = post and f"after timing: {post}" or claim.get("mismatch")
            if flaky:
                verdict, problem = "FLAKY", flaky
        verdicts[cid] = {"verdict": verdict, "reason": problem or "", "stats": stats}
    (out / "verdicts.json").write_text(json.dumps(verdicts))


def _load_claims(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
        return doc.get("cases", {}) if isinstance(doc, dict) else {}
    except (OSError, ValueError):
        return {}


def main(argv: list[str]) -> int:
    command, task_dir, cases, judge = argv[0], Path(argv[1]), Path(argv[2]), Path(argv[3])
    if command == "prepare":
        prepare(task_dir, cases, judge)
    elif command == "check":
        check(task_dir, cases, judge, Path(argv[4]), Path(argv[5]))
    else:
        print(f"unknown command {command}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
