"""Problem packs (tasks.packs): recognised by content, never run on the server; ids, manifests,
templates, and every reason a problem cannot be loaded. The server-side half: no torch here."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kcoral.protocol.errors import BadRequest
from kcoral.runner.limits import Limits
from kcoral.runner.packprobe import parse_answers
from kcoral.tasks.contract import task_contract
from kcoral.tasks.packs import inspect as inspector
from kcoral.tasks.packs.kernelbench import model_new, state_difference, state_digest
from kcoral.tasks.packs.recognise import scan
from kcoral.tasks.registry import DEFAULT_TASKS_DIR, catalog, find_task, gpu_type_for

PACKS = Path(__file__).resolve().parents[1] / "fixtures" / "packs"
KB_SOURCE = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        return x + 1


def get_inputs():
    return [torch.randn(4)]


def get_init_inputs():
    return []
"""


def test_the_fixture_packs_problems_are_tasks_and_the_broken_ones_say_why() -> None:
    tasks, broken = catalog([DEFAULT_TASKS_DIR, PACKS])
    ids = [t.id for t in tasks]
    assert ids[0] == "demo/softmax" and "kda/forward_b1_t512_h8" in ids  # kcoral's own, first
    assert {
        "kernelbench/level1/1_Scale",
        "kernelbench/level1/2_SumMax",
        "kernelbench/level2/1_Linear_Tanh",
        "kernelbench/level1/9_FailsOnImport",  # fails only when run: the job image says so (runner.packprobe)
        "gpumode/cpu_pack/vecadd_py",
        "gpumode/cpu_pack/rowrange_py",
    } <= set(ids)
    reasons = {b.id: b.reason for b in broken}
    assert reasons == {
        "kernelbench/level1/8_NoInitInputs": "8_NoInitInputs.py does not define get_init_inputs",
        "gpumode/cpu_pack/broken_py": "task.yml has no benchmarks (a list of keyword dicts, each with a seed)",
    }
    # kcoral's own tasks dir holds no pack problem (its modules are not mistaken for one)
    assert not [p for p in scan(DEFAULT_TASKS_DIR)]


def test_a_kernelbench_task_has_its_packs_settings_kernelbenchs_tolerance_and_three_draws() -> None:
    task = find_task(PACKS, "kernelbench/level2/1_Linear_Tanh")
    m = task.manifest
    assert task.device == "cpu" and task.timeout_s == 300 and m["holdout"] == {"count": 1}  # kcoral-pack.json
    assert m["tolerance"] == {"atol": 1e-2, "rtol": 1e-2, "allclose": 1.0} and m["pack"]["rule"] == "allclose"
    assert [(w["id"], w.get("timed")) for w in m["workloads"]] == [
        ("standard", True),
        ("draw2", False),
        ("draw3", False),
    ]
    assert m["pack"]["files"] == ["level2/1_Linear_Tanh.py"] and task.root == PACKS / "kernelbench" / "level2"
    assert "A linear layer" in m["description"] and task.public()["format"] == "kernelbench"
    assert "ModelNew" in m["contract"]


def test_a_gpumode_task_keeps_its_tests_seeds_and_drops_its_benchmarks() -> None:
    task = find_task(PACKS, "gpumode/cpu_pack/vecadd_py")
    workloads = task.manifest["workloads"]
    assert workloads[0] == {"id": "test0", "params": {"size": 127, "seed": 11}}
    assert workloads[-1] == {"id": "benchmark0", "params": {"size": 1048576}, "timed": True}
    assert "utils.py" in task.pack["files"] and task.manifest["submission"] == "submission.py"
    assert task.timeout_s == 120  # its task.yml's test_timeout and benchmark_timeout (the pack's is 300)
    assert task.module().holdout_params(__import__("random").Random(1), 2) == [{"size": 1048576}] * 2


def test_the_content_hash_is_the_problems_own_files(tmp_path: Path) -> None:
    level = tmp_path / "kb" / "level1"
    level.mkdir(parents=True)
    (level / "1_A.py").write_text(KB_SOURCE)
    (level / "2_B.py").write_text(KB_SOURCE)
    before = {t.id: t.content_hash() for t in catalog(tmp_path)[0]}
    (level / "2_B.py").write_text(KB_SOURCE.replace("x + 1", "x + 2"))
    after = {t.id: t.content_hash() for t in catalog(tmp_path)[0]}
    assert before["kernelbench/level1/1_A"] == after["kernelbench/level1/1_A"]
    assert before["kernelbench/level1/2_B"] != after["kernelbench/level1/2_B"]


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        (KB_SOURCE.replace("    def forward(self, x):", "    def forward(self, x)"), "1_P.py does not parse: line 9"),
        (KB_SOURCE.replace("def get_init_inputs", "def _init"), "does not define get_init_inputs"),
        (b"class Model:\n\ndef get_inputs():\n  \xff", "is not UTF-8 text"),
    ],
)
def test_a_kernelbench_file_that_cannot_load_is_listed_with_its_reason(
    tmp_path: Path, source: str | bytes, reason: str
) -> None:
    (tmp_path / "level1").mkdir()
    path = tmp_path / "level1" / "1_P.py"
    path.write_bytes(source if isinstance(source, bytes) else source.encode())
    tasks, broken = catalog(tmp_path)
    assert not tasks and len(broken) == 1 and broken[0].id == "kernelbench/level1/1_P" and reason in broken[0].reason
    with pytest.raises(BadRequest, match="cannot be loaded"):
        find_task(tmp_path, "kernelbench/level1/1_P")


def test_files_that_are_not_problems_are_left_alone_and_a_kcoral_task_stays_one(tmp_path: Path) -> None:
    (tmp_path / "helpers.py").write_text("def get_inputs():\n    return []\n")  # no Model: not a problem
    (tmp_path / "notes.txt").write_text("class Model\n")
    assert catalog(tmp_path) == ([], [])


def gm_problem(root: Path, yml: str, reference: str = "") -> Path:
    folder = root / "pack" / "p1"
    folder.mkdir(parents=True)
    (folder / "task.yml").write_text(yml)
    (folder / "reference.py").write_text(
        reference
        or "from utils import make_check\n\ndef generate_input(size, seed):\n    pass\n\n"
        "def ref_kernel(data):\n    pass\n\ncheck_implementation = make_check(ref_kernel)\n"
    )
    return folder


@pytest.mark.parametrize(
    ("yml", "reference", "reason"),
    [
        ("tests: [{size: 1, seed: 1}]\nbenchmarks: [{size: 2, seed: 2}]\n", "", ""),
        ("tests: [{size: 1}]\nbenchmarks: [{size: 2, seed: 2}]\n", "", "tests[0] has no integer seed"),
        ("tests: [{size: 1, seed: 1}\n", "", "task.yml is not YAML"),
        ("- 1\n", "", "task.yml is not a mapping"),
        ("tests: [{size: 1, seed: 1}]\nbenchmarks: [{size: [2], seed: 2}]\n", "", "values must be numbers"),
        (
            "tests: [{size: 1, seed: 1}]\nbenchmarks: [{size: 2, seed: 2}]\n",
            "def generate_input(**k):\n    pass\n",
            "reference.py does not define ref_kernel, check_implementation",
        ),
    ],
)
def test_a_gpumode_folder_is_recognised_by_task_yml_and_checked(
    tmp_path: Path, yml: str, reference: str, reason: str
) -> None:
    gm_problem(tmp_path, yml, reference)
    tasks, broken = catalog(tmp_path)
    if not reason:  # check_implementation made by a helper is still defined (an assignment)
        assert [t.id for t in tasks] == ["gpumode/pack/p1"] and not broken
    else:
        assert not tasks and [b.id for b in broken] == ["gpumode/pack/p1"] and reason in broken[0].reason


@pytest.mark.parametrize(
    ("timeouts", "limit"),
    [
        ("ranked_timeout: 420\ntest_timeout: 60\nbenchmark_timeout: 90\n", 420),
        ("test_timeout: 60\nbenchmark_timeout: 90\n", 150),
        ("test_timeout: 60\n", 600),  # half a limit is none: the default
        ("ranked_timeout: 0\n", 600),
        ("ranked_timeout: nine\n", 600),
        ("", 600),
    ],
)
def test_a_gpumode_problem_keeps_its_own_time_limit(tmp_path: Path, timeouts: str, limit: float) -> None:
    gm_problem(tmp_path, "tests: [{size: 1, seed: 1}]\nbenchmarks: [{size: 2, seed: 2}]\n" + timeouts)
    assert find_task(tmp_path, "gpumode/pack/p1").timeout_s == limit


def test_an_id_taken_twice_is_served_from_the_first_dir(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / name / "level1").mkdir(parents=True)
        (tmp_path / name / "level1" / "1_P.py").write_text(KB_SOURCE)
    tasks, broken = catalog([tmp_path / "a", tmp_path / "b"])
    assert [t.root for t in tasks] == [tmp_path / "a" / "level1"]
    assert broken[0].reason.startswith("the id is taken by ")


@pytest.mark.parametrize(
    ("settings", "reason"),
    [
        ({"device": "tpu"}, "device is cuda or cpu"),
        ({"devices": "cpu"}, "an object of"),
        ({"holdout": "2"}, "holdout is a whole number"),  # once a ValueError out of the listing itself
        ({"holdout": 10**9}, "holdout is a whole number of probes from 0 to 50"),
        ({"timeout_s": -5}, "timeout_s is a number of seconds over 0"),
        ({"timeout_s": 0}, "timeout_s is a number of seconds over 0"),
        ({"holdout": -1}, "holdout is a whole number"),
        ({"holdout": 51}, "holdout is a whole number"),
        ({"tolerance": {"atol": -0.1}}, "tolerance's values are numbers, 0 or more"),
        ({"tolerance": []}, "tolerance is an object"),
        ({"timeout_s": True}, "timeout_s is a number"),
        ({"tolerance": {"atol": "x"}}, "tolerance's values are numbers, 0 or more"),
        ({"tolerance": {"atol": float("nan")}}, "tolerance's values are numbers"),
        ({"tolerance": {"tol": 1}}, "tolerance is an object of ['allclose', 'atol', 'rms', 'rtol'] only"),
        ({"timing": 3}, "timing is an object"),
        ({"timing": {"max_rep": 5}}, "unknown timing settings ['max_rep']"),
        ({"timing": {"max_reps": "x"}}, "timing max_reps"),
        ({"device": "cpu", "timing": {"batch": 4, "graph": True}}, "timing graph needs a CUDA task"),
        ({"gpu_types": "B200"}, "gpu_types is a list of at most 16 GPU types such as B200"),
        ({"gpu_types": ["B200", 7]}, "gpu_types is a list"),
        ({"gpu_types": ["B 200"]}, "gpu_types is a list"),
        ({"gpu_types": ["../x"]}, "gpu_types is a list"),
        ({"gpu_types": ["any"]}, "gpu_types is a list"),
        ({"gpu_types": ["H200"] * 17}, "gpu_types is a list of at most 16"),
        ({"device": "cpu", "gpu_types": ["B200"]}, "gpu_types is for a pack whose device is cuda"),
    ],
)
def test_a_bad_pack_settings_file_makes_its_problems_unloadable(
    tmp_path: Path, settings: dict[str, object], reason: str
) -> None:
    """Every value is checked as the file is read: the pack's problems are listed with the reason, and
    the listing itself never fails."""
    (tmp_path / "level1").mkdir()
    (tmp_path / "level1" / "1_P.py").write_text(KB_SOURCE)
    (tmp_path / "kcoral-pack.json").write_text(json.dumps(settings))
    tasks, broken = catalog(tmp_path)
    assert not tasks and "kcoral-pack.json in " in broken[0].reason and reason in broken[0].reason, broken


@pytest.mark.parametrize(
    "settings",
    [
        {"holdout": 0},
        {"holdout": 50},
        {"timeout_s": 0.5, "device": "cpu"},
        {"tolerance": {"atol": 0, "rtol": 0.5, "rms": 1, "allclose": 1}},
        {"timing": {"batch": 4, "graph": True}},  # a CUDA pack's graphs
        {"gpu_types": ["B200", "GB200"]},
        {"gpu_types": []},
    ],
)
def test_good_pack_settings_load(tmp_path: Path, settings: dict[str, object]) -> None:
    (tmp_path / "level1").mkdir()
    (tmp_path / "level1" / "1_P.py").write_text(KB_SOURCE)
    (tmp_path / "kcoral-pack.json").write_text(json.dumps(settings))
    (task,), broken = catalog(tmp_path)
    assert not broken and task.device == settings.get("device", "cuda")


def test_a_packs_gpu_types_are_its_problems_and_narrow_what_an_evaluation_asks_for(tmp_path: Path) -> None:
    """A pack for some GPU types (a Blackwell-only or AMD pack): each problem carries them; an evaluation
    asking for any GPU asks for the first of them this server has (else the first: the placement then
    refuses it with the types there are), one asking for another type is refused naming both."""
    (tmp_path / "level1").mkdir()
    (tmp_path / "level1" / "1_P.py").write_text(KB_SOURCE)
    (tmp_path / "kcoral-pack.json").write_text(json.dumps({"gpu_types": ["B200", "GB200"]}))
    (task,), broken = catalog(tmp_path)
    assert not broken and task.gpu_types == ("B200", "GB200") and task.manifest["gpu_types"] == ["B200", "GB200"]
    assert gpu_type_for(task, "any", ["H200", "gb200"]) == "GB200"
    assert gpu_type_for(task, "any", ["H200"]) == "B200"
    assert gpu_type_for(task, "any", []) == "B200"
    assert gpu_type_for(task, "b200", ["H200"]) == "b200"
    with pytest.raises(BadRequest, match=r"runs on B200 or GB200 only \(its pack says so\); not on H200"):
        gpu_type_for(task, "H200", ["H200"])
    anywhere = find_task(DEFAULT_TASKS_DIR, "demo/softmax")
    assert not anywhere.gpu_types and gpu_type_for(anywhere, "H100", ["H200"]) == "H100"


def test_a_packs_tolerance_changes_kernelbenchs_bounds_and_keeps_its_rule(tmp_path: Path) -> None:
    (tmp_path / "level1").mkdir()
    (tmp_path / "level1" / "1_P.py").write_text(KB_SOURCE)
    (tmp_path / "kcoral-pack.json").write_text(json.dumps({"tolerance": {"atol": 0.1, "rtol": 0}}))
    (task,), broken = catalog(tmp_path)
    assert not broken and task.manifest["tolerance"] == {"atol": 0.1, "rtol": 0, "allclose": 1.0}


def test_the_kernelbench_template_is_the_problem_with_model_renamed() -> None:
    source = model_new(KB_SOURCE + "# Model in a comment stays\nx = 'Model'\n")
    assert "class ModelNew(nn.Module):" in source and "super(ModelNew, self).__init__()" in source
    assert "# Model in a comment stays" in source and "x = 'Model'" in source and "def get_inputs" in source


#: Model's state as the supervisor describes it (tasks.packs.kernelbench.describe_state)
MODEL_STATE = [("linear.bias", "float32", [384], "b" * 64), ("linear.weight", "float32", [384, 512], "a" * 64)]


def said(entries: list, digest: str | None = None, named: bool = True) -> dict:
    """A candidate's worker's report (state_report) of ``entries``, as it arrives (JSON: lists)."""
    wire = json.loads(json.dumps(entries))
    return {"digest": digest or state_digest(wire), "entries": wire if named else None}


@pytest.mark.parametrize(
    ("report", "reason"),
    [
        (said(MODEL_STATE), ""),
        (said(MODEL_STATE, named=False), ""),  # too big to name: the digest alone decides
        (
            said([MODEL_STATE[0], ("linear.weight", "float32", [384, 512], "c" * 64)]),
            "linear.weight holds other values",
        ),
        (
            said([MODEL_STATE[0], ("linear.weight", "bfloat16", [384, 512], "a" * 64)]),
            "linear.weight is bfloat16 [384, 512]",
        ),
        (said([MODEL_STATE[0], ("linear.weight", "float32", [512, 384], "a" * 64)]), "Model's float32 [384, 512]"),
        (
            said([("fc.bias", *MODEL_STATE[0][1:]), ("fc.weight", *MODEL_STATE[1][1:])]),
            "lack ['linear.bias', 'linear.weight'] and add ['fc.bias', 'fc.weight']",
        ),
        (said([MODEL_STATE[0]], named=False), "its 2 parameters and buffers are not Model's (too many to name"),
        (said(MODEL_STATE, digest="0" * 64), "its description and its digest disagree"),  # a forged report
        (None, "its worker did not say"),  # a worker that said nothing (a patched setup)
        ({"digest": 7}, "its worker did not say"),
        ({"digest": "0", "entries": [["x", "float32", ["1"], "a"]]}, "too many to name"),  # malformed entries
        ({"digest": "0", "entries": [["x"] * 4] * 3000}, "too many to name"),
    ],
)
def test_the_supervisor_compares_the_candidates_weights_with_models(report: object, reason: str) -> None:
    """The weights check runs in the supervisor on what the candidate's worker reported (read as
    hostile input), naming the first difference; an empty reason is a match."""
    got = state_difference(MODEL_STATE, report)
    assert (reason in got) if reason else got == "", got


def test_the_contract_of_a_pack_task_uses_the_inspected_shapes_and_the_formats_rule() -> None:
    task = find_task(PACKS, "kernelbench/level1/2_SumMax")
    with pytest.raises(ValueError, match="not been inspected"):
        task_contract(task, Limits(), "img", "3.11", {})
    shapes = [{"params": {}, "inputs": {"in0": [[128, 300], "float32"]}, "scalars": {"in1": 0.5},
               "outputs": {"out0": [[128], "float32"], "out1": [[128], "float32"]}}]  # fmt: skip
    inspected = type(task)(task.root, {**task.manifest, "pack": {**task.pack, "shapes": shapes}})
    assert inspected.content_hash() == task.content_hash()  # the inspection is not the problem's version
    c = task_contract(inspected, Limits(), "img", "3.11", {})
    standard = c.workloads[0]
    assert standard.inputs["in0"].shape == [128, 300] and standard.scalars == {"in1": 0.5}
    assert list(standard.outputs) == ["out0", "out1"] and "torch.allclose" in c.tolerance_rule
    assert "class ModelNew(nn.Module)" in c.template and c.submission_file == "solution.py"
    assert c.format == "kernelbench"
    gm = find_task(PACKS, "gpumode/cpu_pack/vecadd_py")
    assert gm.module().template() == (gm.root / "template.py").read_text()


def test_the_inspectors_answers_are_read_strictly() -> None:
    lines = b"\n".join(
        [
            b"a problem's own print",
            b'KCORAL-INSPECT {"key": "k1", "shapes": [{"params": {}, "inputs": {"in0": [[2, 3], "float32"]}, '
            b'"outputs": {"out0": [[2], "float32"]}, "built_on": "meta"}], "seconds": 1.25, "imports": 3}',
            b'KCORAL-INSPECT {"key": "k2", "error": "RuntimeError: no", "seconds": 0.5}',
            b'KCORAL-INSPECT {"key": "k3", "shapes": [{"params": {}, "inputs": {"in0": "nonsense"}}]}',
            b'KCORAL-INSPECT {"key": "stranger", "error": "x"}',
            # written by a child that ran the problem's code: figures that are not figures are no answer
            b'KCORAL-INSPECT {"key": "k4", "error": "x", "imports": Infinity}',
            b'KCORAL-INSPECT {"key": "k5", "error": "x", "seconds": NaN}',
            b'KCORAL-INSPECT {"key": "k6", "error": "x", "imports": -1, "seconds": true}',
        ]
    )
    found = parse_answers(lines, {"k1", "k2", "k3", "k4", "k5", "k6"})
    assert found["k1"].shapes[0]["inputs"] == {"in0": [[2, 3], "float32"]} and found["k2"].error == "RuntimeError: no"
    assert set(found) == {"k1", "k2"}
    # the server's log names the slowest, with what their children imported
    assert (found["k1"].seconds, found["k1"].built_on(), found["k1"].imports) == (1.25, "meta", 3)
    assert (found["k2"].seconds, found["k2"].built_on(), found["k2"].imports) == (0.5, "RuntimeError: no", 0)


def test_the_inspector_gives_a_problem_that_hangs_or_dies_its_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    def hangs(root: Path, manifest: dict[str, object]) -> list[dict[str, object]]:
        time.sleep(60)
        return []

    def dies(root: Path, manifest: dict[str, object]) -> list[dict[str, object]]:
        os.kill(os.getpid(), signal.SIGKILL)
        return []

    def raises(root: Path, manifest: dict[str, object]) -> list[dict[str, object]]:
        raise ValueError("bad shapes")

    began = time.monotonic()
    monkeypatch.setattr(inspector, "describe", hangs)
    assert inspector.inspect_one(PACKS, {}, 0.5) == {"error": "building its inputs and outputs did not finish in 0.5 s"}
    assert time.monotonic() - began < 5
    monkeypatch.setattr(inspector, "describe", dies)
    assert inspector.inspect_one(PACKS, {}, 5) == {"error": "the process building its inputs died of signal 9"}
    monkeypatch.setattr(inspector, "describe", raises)
    assert inspector.inspect_one(PACKS, {}, 5) == {"error": "ValueError: bad shapes", "imports": 0}


def test_each_suites_headline() -> None:
    from kcoral.tasks.packs.headline import headline, line

    kb = {"pack": {"format": "kernelbench"}}
    rows = [{"id": "standard", "timed": True, "speedup": 1.2, "kernel_ms": 2.0, "baseline_ms": 2.4}]
    report = {"holdout": "PASS", "passed": 1, "total": 1, "workloads": rows}
    summary = {"speedup": 1.2, "speedup_lo": 0.99, "speedup_hi": 1.3}
    assert headline({}, report) is None and headline(kb, {**report, "check": True}) is None
    doc = headline(kb, {**report, "summary": summary})
    assert doc == {
        "format": "kernelbench",
        "correct": True,
        "speedup_over_eager": 1.2,
        "fast_1": True,
        "fast_1_interval": False,
        "fast_1_certain": False,
        "calibrated": False,
    }
    assert line(doc) == "KernelBench: correct, 1.2000x over eager PyTorch: fast_1 yes (not its whole 95% interval)"
    # wholly above 1.0: certain only where the slot's A/A calibration widened it (one request's interval
    # alone misses the noise between requests)
    above = {**summary, "speedup_lo": 1.05}
    alone = headline(kb, {**report, "summary": above}) or {}
    assert alone["fast_1_certain"] is False and alone["calibrated"] is False
    assert alone["fast_1_interval"] is True
    assert line(alone).endswith("but this slot is uncalibrated: not certain (kcoral calibrate TASK))")
    floor = {"requests": 8, "position_ms": 0.0, "half_width": 0.1}
    calibrated = headline(kb, {**report, "workloads": [{**rows[0], "calibration": floor}], "summary": above}) or {}
    assert calibrated["fast_1_certain"] is True and line(calibrated).endswith("(its whole 95% interval too)")
    assert line(headline(kb, {**report, "holdout": "FAIL"}) or {}).startswith("KernelBench: not correct")
    gm = {"pack": {"format": "gpumode"}}
    two = rows + [{"id": "b1", "timed": True, "speedup": 1.0, "kernel_ms": 8.0, "baseline_ms": 8.0}]
    doc = headline(gm, {**report, "workloads": two, "passed": 2, "total": 2, "summary": summary})
    assert (
        doc is not None
        and doc["geomean_ms"] == pytest.approx(4.0)
        and doc["reference_geomean_ms"] == pytest.approx((2.4 * 8.0) ** 0.5)
    )
    assert line(doc).startswith("GPU MODE: geometric mean of the benchmarks' times 4.000000 ms")


def test_a_request_is_answered_busy_while_the_start_inspects_the_problems(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server's start inspects every problem in one container (minutes for a GPU-sized pack): a
    request for a problem not known yet waits a little, then is told to ask again (503), not held until
    its client times out (on the H200 three `kcoral init`s did, 2026-12-05)."""
    import threading

    from kcoral.protocol.errors import ServerBusy
    from kcoral.runner import packprobe

    monkeypatch.setattr(packprobe, "REQUEST_WAIT_S", 0.2)
    started, release = threading.Event(), threading.Event()

    class SlowEngine:
        def run_group(self, *args: object) -> None:
            started.set()
            release.wait(10)

        def remove_exited(self, job_id: str) -> None:
            pass

    task = find_task(PACKS, "kernelbench/level1/1_Scale")
    probe = packprobe.PackProbe(SlowEngine(), "image", "python3", tmp_path)  # type: ignore[arg-type]
    first = threading.Thread(target=probe.inspect, args=([task],))
    first.start()
    assert started.wait(5)
    t0 = time.monotonic()
    with pytest.raises(ServerBusy, match="ask again") as busy:
        probe.with_shapes(task)
    assert busy.value.status == 503 and busy.value.retry_after == 5
    assert time.monotonic() - t0 < 5
    release.set()
    first.join(10)
    assert probe.known(task) is not None  # answered (here: no answer, so the reason) and kept


def _writes_its_own_answer(text: bytes) -> Callable[[Path, dict[str, object]], list[dict[str, object]]]:
    """A problem's code that writes ``text`` into the inspector's pipe itself (its caller's frame holds
    the pipe's end) and leaves before the inspector's own answer is written."""

    def describe(root: Path, manifest: dict[str, object]) -> list[dict[str, object]]:
        os.write(sys._getframe(1).f_locals["write"], text)
        os._exit(0)

    return describe


def test_a_problem_that_writes_the_answer_itself_speaks_for_no_other_and_breaks_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    forged = b'{"key": "another-problem", "seconds": 0, "shapes": [], "shadow": 1}'
    monkeypatch.setattr(inspector, "describe", _writes_its_own_answer(forged))
    assert inspector.inspect_one(PACKS, {}, 5) == {"shapes": []}  # the key and the time are the inspector's
    monkeypatch.setattr(inspector, "describe", _writes_its_own_answer(b"[1, 2]"))
    assert inspector.inspect_one(PACKS, {}, 5) == {"error": "the process building its inputs exited with code 0"}
