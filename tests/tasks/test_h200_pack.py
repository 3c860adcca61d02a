"""bench/packs/h200, the GPU host's acceptance pack for issue 32 (scripts/gpu-host-packs.sh): every file in
it is part of a problem the server loads (read as the server reads them: no torch, no engine), the
pack has its counts, its settings are a short GPU timing budget, and the acceptance runner's wrong
submissions and shards are what it says."""

from __future__ import annotations

from pathlib import Path

from bench.packs_acceptance import shard, wrong_submission
from kcoral.tasks.cases import timing_method
from kcoral.tasks.harness.schema import TimingMethod
from kcoral.tasks.packs.kernelbench import model_new
from kcoral.tasks.packs.recognise import GPUMODE, KERNELBENCH, scan
from kcoral.tasks.registry import catalog

H200 = Path(__file__).resolve().parents[2] / "bench" / "packs" / "h200"


def test_every_file_of_the_h200_pack_belongs_to_a_problem_that_loads() -> None:
    tasks, broken = catalog(H200)
    assert broken == []
    ids = [t.id for t in tasks]
    assert len([i for i in ids if i.startswith("kernelbench/level1/")]) >= 20
    assert len([i for i in ids if i.startswith("kernelbench/level2/")]) >= 5
    assert len([i for i in ids if i.startswith("gpumode/")]) >= 5
    problems = scan(H200)
    assert sorted(p.id for p in problems) == sorted(ids) and not [p for p in problems if p.error]
    # every file is one problem's (or a GPU MODE pack's shared one): nothing is silently not a problem
    claimed = {H200 / "kcoral-pack.json"}
    for p in problems:
        claimed |= {p.folder.parent / f for f in p.files}
        if p.format == GPUMODE:
            template = p.spec["templates"].get("Python", "")
            assert (p.folder / template).is_file(), f"{p.id}: no template {template!r}"
    files = [f for f in H200.rglob("*") if f.is_file() and "__pycache__" not in f.parts]
    assert sorted(str(f.relative_to(H200)) for f in files if f not in claimed) == []


def test_the_h200_packs_settings_are_a_short_gpu_budget() -> None:
    tasks, _ = catalog(H200)
    for task in tasks:
        m = task.manifest
        assert task.device == "cuda" and m["holdout"]["count"] >= 1, task.id
        method = timing_method(TimingMethod(), m)  # every key one the judge has
        assert method.budget_s <= 5 and method.max_reps <= 100 and method.warmup_s <= 1, task.id
        timed = [w for w in m["workloads"] if w.get("timed")]
        assert 1 <= len(timed) <= 2, task.id  # a few seconds of timing each: ~10-15 s an evaluation


def test_the_acceptance_runners_wrong_submissions_compile_and_its_shards_split_the_list() -> None:
    for p in scan(H200):
        if p.format == KERNELBENCH:
            source = model_new((p.folder / p.entry).read_text())
        else:
            source = (p.folder / p.spec["templates"]["Python"]).read_text()
        wrong = wrong_submission(source, p.format)
        compile(wrong, f"{p.id}/wrong.py", "exec")
        assert ("ModelNew.forward = _kcoral_wrong_forward" in wrong) == (p.format == KERNELBENCH)
    ids = [f"t{i:02d}" for i in range(37)]
    halves = [shard(ids, "1/2"), shard(ids, "2/2")]
    assert sorted(halves[0] + halves[1]) == ids and abs(len(halves[0]) - len(halves[1])) <= 1
    assert shard(ids, "1/1") == ids
