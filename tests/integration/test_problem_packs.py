"""Problem packs through a real server (`kcoral serve --tasks-dir` twice: kcoral's own tasks and a
folder of packs): every problem listed, those that cannot load with their reason (read on the server,
or run in the job image), a problem's contract with its shapes as its own code built them, and
`kcoral init` writing the format's native submission."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import docker
import pytest

from kcoral.cli.main import run
from kcoral.protocol.errors import EXIT_INCONCLUSIVE
from kcoral.tasks.registry import DEFAULT_TASKS_DIR
from tests.conftest import RunningServer, server_settings, serving

PACKS = Path(__file__).resolve().parents[1] / "fixtures" / "packs"
#: a GPU problem as GPU suites write them (its tensors made on "cuda" by name): shown on a host without one
PACKS_CUDA = PACKS.parent / "packs-cuda"


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, docker_client: docker.DockerClient, job_image: str
) -> Iterator[RunningServer]:
    """One server of the packs for the evaluations (its start inspects every problem in the job image:
    once for the file, not once a test)."""
    settings = server_settings(tmp_path_factory.mktemp("packs"), job_image, tasks_dirs=(PACKS,))
    with serving(docker_client, settings) as srv:
        yield srv


def test_packs_are_listed_shown_and_initialised(
    server_factory: Callable[..., RunningServer], capfd, tmp_path: Path
) -> None:
    server = server_factory(tasks_dirs=(DEFAULT_TASKS_DIR, PACKS, PACKS_CUDA))
    # a problem that makes its tensors on "cuda" by name is inspected all the same, with no GPU (as meta tensors)
    gpu = server.http.get("/v1/tasks/kernelbench/level1/1_CudaInputs")
    assert gpu.status_code == 200, gpu.text
    assert gpu.json()["device"] == "cuda" and gpu.json()["workloads"][0]["outputs"]["out0"]["shape"] == [32, 128]
    # ... and one with an op the meta device lacks (torch.bincount) on the CPU, its "cuda" tensors made there
    counts = server.http.get("/v1/tasks/kernelbench/level1/2_CudaBincount")
    assert counts.status_code == 200, counts.text
    standard = counts.json()["workloads"][0]
    assert standard["outputs"]["out0"] == {"shape": [256], "dtype": "int64"}
    # a problem's contract: its inputs and outputs built by its own code in the job image
    r = server.http.get("/v1/tasks/kernelbench/level1/2_SumMax")
    assert r.status_code == 200, r.text
    doc = r.json()
    standard = doc["workloads"][0]
    assert standard["id"] == "standard" and standard["timed"] is True
    assert standard["inputs"] == {"in0": {"shape": [128, 300], "dtype": "float32"}}
    assert list(standard["scalars"]) == ["in1"] and 0.25 <= standard["scalars"]["in1"] < 1.25  # drawn, once
    assert standard["outputs"] == {
        "out0": {"shape": [128], "dtype": "float32"},
        "out1": {"shape": [128], "dtype": "float32"},
    }
    assert (
        doc["tolerance"] == {"atol": 0.01, "rtol": 0.01, "allclose": 1.0} and "torch.allclose" in doc["tolerance_rule"]
    )
    assert doc["device"] == "cpu" and doc["timeout_s"] == 300 and doc["format"] == "kernelbench"
    assert "class ModelNew(nn.Module)" in doc["template"] and "packages" in doc

    gm = server.http.get("/v1/tasks/gpumode/cpu_pack/vecadd_py").json()
    bench = next(w for w in gm["workloads"] if w["id"] == "benchmark0")
    assert bench["params"] == {"size": 1048576} and bench["outputs"] == {
        "out0": {"shape": [1048576], "dtype": "float32"}
    }
    assert [bench["inputs"][f"in{i}"]["shape"] for i in range(3)] == [[1048576]] * 3  # a, b and the preallocated out
    assert gm["submission_file"] == "submission.py" and "check_implementation" in gm["tolerance_rule"]

    # a problem that raises as it is imported: found so in the job image, never in the server
    failing = server.http.get("/v1/tasks/kernelbench/level1/9_FailsOnImport")
    assert failing.status_code == 400 and "fails as it is imported (on purpose)" in failing.json()["message"]
    missing = server.http.get("/v1/tasks/kernelbench/level1/8_NoInitInputs")
    assert missing.status_code == 404 and "does not define get_init_inputs" in missing.json()["message"]

    assert run(["tasks", "--json", "--remote", server.url]) == 0
    listed = {t["id"]: t for t in json.loads(capfd.readouterr().out)}
    assert {"demo/softmax", "kernelbench/level1/1_Scale", "kernelbench/level2/1_Linear_Tanh"} <= set(listed)
    assert listed["kernelbench/level1/1_Scale"]["format"] == "kernelbench" and "error" not in listed["demo/softmax"]
    assert "does not define get_init_inputs" in listed["kernelbench/level1/8_NoInitInputs"]["error"]
    assert "no benchmarks" in listed["gpumode/cpu_pack/broken_py"]["error"]
    assert "fails as it is imported" in listed["kernelbench/level1/9_FailsOnImport"]["error"]
    # a pack for GPU types this server has none of (its kcoral-pack.json's gpu_types): listed with the reason,
    # shown, and refused at once if asked for (never a job that waits for a GPU that is not here)
    blackwell = listed["kernelbench/blackwell/1_Fp4Scale"]["error"]
    assert blackwell.startswith("cannot run on this server: it runs on B200 or GB200 only (its pack says so);")
    assert server.http.get("/v1/tasks/kernelbench/blackwell/1_Fp4Scale").json()["gpu_types"] == ["B200", "GB200"]
    assert run(["tasks", "show", "kernelbench/blackwell/1_Fp4Scale", "--remote", server.url]) == 0
    assert "runs on: B200 or GB200 only" in capfd.readouterr().out
    (tmp_path / "fp4.py").write_text("from torch import nn\n\nclass ModelNew(nn.Module):\n    pass\n")
    assert run(["eval", "kernelbench/blackwell/1_Fp4Scale", str(tmp_path / "fp4.py"), "--remote", server.url]) == 2
    assert "runs on B200 or GB200 only (its pack says so), and this server has no GPU" in capfd.readouterr().err
    assert run(["tasks", "--remote", server.url]) == 0
    out = capfd.readouterr().out
    assert "cannot be loaded or run here:" in out and "kernelbench/level1/8_NoInitInputs (kernelbench): " in out

    assert run(["tasks", "show", "kernelbench/level2/1_Linear_Tanh", "--remote", server.url]) == 0
    out = capfd.readouterr().out
    assert "in:  in0 float32[256, 512]" in out and "out: out0 float32[256, 384]" in out and "allclose" in out

    assert run(["init", "kernelbench/level2/1_Linear_Tanh", str(tmp_path / "kb"), "--remote", server.url]) == 0
    assert "super(ModelNew, self).__init__()" in (tmp_path / "kb" / "solution.py").read_text()
    assert run(["init", "gpumode/cpu_pack/vecadd_py", str(tmp_path / "gm"), "--remote", server.url]) == 0
    assert "def custom_kernel(data: input_t)" in (tmp_path / "gm" / "submission.py").read_text()


def test_a_kernelbench_problems_own_model_as_modelnew_passes_and_a_wrong_one_fails(
    server: RunningServer, capfd, tmp_path: Path
) -> None:
    """Judged by kcoral's supervisor: the problem's Model as ModelNew (weights from the same seed, a
    tuple of outputs, a number among the inputs) passes every check, and a wrong one fails with its
    reason. The speedup (about 1.0x) is asserted only where the host was quiet enough to give one."""
    task = "kernelbench/level2/1_Linear_Tanh"
    assert run(["init", task, str(tmp_path / "aa"), "--remote", server.url]) == 0
    code = run(["eval", task, str(tmp_path / "aa"), "--remote", server.url, "-o", str(tmp_path / "o1"), "--json"])
    out, err = capfd.readouterr()
    report = json.loads(out)
    assert report["holdout"] == "PASS", out[-3000:] + err[-2000:]
    rows = {w["id"]: w for w in report["workloads"]}
    assert [rows[w]["verdict"] for w in ("standard", "draw2", "draw3")] == ["PASS"] * 3, out[-3000:]
    assert report["suite"]["format"] == "kernelbench" and report["suite"]["correct"] is True
    if code == 0:
        # near 1.0x, not at it: on a lease of 2 cores only the candidate's calls cross to a core of their own,
        # which halts between its calls; on the 2-core dev VM this ~1 ms call measured 0.81-0.92x in 16
        # requests (bench/results/two-core-layout-dev-vm: a known bias of that layout, open in issue 29)
        assert 0.7 < rows["standard"]["speedup"] < 1.25, rows["standard"]
        # ... which the report says, uncalibrated as this slot is
        assert any(line.startswith("uncorrected position: a 2-core lease") for line in report["lines"])
        assert "fast_1_certain" in report["suite"]
        assert any(line.startswith("KernelBench: correct, ") for line in report["lines"])
    else:  # a host too busy to time it: inconclusive (exit 3), no score, never a gain
        assert code == EXIT_INCONCLUSIVE and "speedup" not in rows["standard"], out[-3000:]

    wrong = tmp_path / "wrong"
    wrong.mkdir()
    source = (tmp_path / "aa" / "solution.py").read_text()
    (wrong / "solution.py").write_text(source.replace("* 0.5", "* 0.6"))
    code = run(["eval", task, str(wrong), "--remote", server.url, "-o", str(tmp_path / "o2"), "--check"])
    out, err = capfd.readouterr()
    assert code != 0 and "torch.allclose's rule" in out + err, out[-3000:] + err[-2000:]


@pytest.mark.parametrize(
    ("task", "native"),
    [("kernelbench/level1/1_Scale", "solution.py"), ("gpumode/cpu_pack/vecadd_py", "submission.py")],
)
def test_one_native_file_is_a_submission(server: RunningServer, capfd, tmp_path: Path, task: str, native: str) -> None:
    """A suite's submission in its own form, one .py file of any name, is evaluated as the file the task's
    worker imports, and labelled after it; anything else that is not a folder is refused (exit 2)."""
    assert run(["init", task, str(tmp_path / "init"), "--remote", server.url]) == 0
    mine = tmp_path / "my_kernel.py"
    mine.write_bytes((tmp_path / "init" / native).read_bytes())
    code = run(["eval", task, str(mine), "--remote", server.url, "-o", str(tmp_path / "o"), "--check"])
    out, err = capfd.readouterr()
    assert code == 0 and f"sending {mine} as {native}" in err and "label my_kernel-" in err, (out + err)[-3000:]
    notes = tmp_path / "notes.txt"
    notes.write_text("not a submission")
    assert run(["eval", task, str(notes), "--remote", server.url]) == 2
    assert "not a directory or a .py file" in capfd.readouterr().err


def test_a_gpumode_problems_reference_as_custom_kernel_passes_its_check_and_a_wrong_one_fails_it(
    server: RunningServer, capfd, tmp_path: Path
) -> None:
    """Judged by the problem's own check_implementation, run by the supervisor: submission.py (its own
    template, the reference's approach) writing into the preallocated output passes; one that
    subtracts fails with the check's message."""
    task = "gpumode/cpu_pack/vecadd_py"
    assert run(["init", task, str(tmp_path / "aa"), "--remote", server.url]) == 0
    code = run(["eval", task, str(tmp_path / "aa"), "--remote", server.url, "-o", str(tmp_path / "o1"), "--json"])
    out, err = capfd.readouterr()
    report = json.loads(out)
    rows = {w["id"]: w for w in report["workloads"]}
    assert report["holdout"] == "PASS", out[-3000:] + err[-2000:]
    assert [rows[w]["verdict"] for w in ("test0", "test1", "benchmark0")] == ["PASS"] * 3, out[-3000:]
    assert report["suite"]["format"] == "gpumode" and report["suite"]["correct"] is True
    if code == 0:
        assert 0.8 < rows["benchmark0"]["speedup"] < 1.25, rows["benchmark0"]
        assert report["suite"]["geomean_ms"] == pytest.approx(rows["benchmark0"]["kernel_ms"])
    else:
        assert code == EXIT_INCONCLUSIVE and "speedup" not in rows["benchmark0"], out[-3000:]
    # the supervisor's draws of the problem's data leave no garbage in reference cycles (one in the data's
    # flattening held every drawn sample until the collector's next pass: out of memory on an H100)
    judge = (server.settings.data_dir / "jobs" / report["job_id"] / "eval" / "judge.log").read_text()
    assert "benchmark0: " in judge and "objects in reference cycles freed between iterations: 0" in judge, judge[-3000:]

    wrong = tmp_path / "wrong"
    wrong.mkdir()
    source = (tmp_path / "aa" / "submission.py").read_text()
    (wrong / "submission.py").write_text(source.replace("torch.add(a, b, out=out)", "torch.sub(a, b, out=out)"))
    code = run(["eval", task, str(wrong), "--remote", server.url, "-o", str(tmp_path / "o2"), "--check"])
    out, err = capfd.readouterr()
    assert code != 0 and "mismatch: largest difference" in out + err, out[-3000:] + err[-2000:]
    # the preallocated output it returns unwritten holds NaN (the supervisor's poison), never a stale answer
    (wrong / "submission.py").write_text(source.replace("torch.add(a, b, out=out)", "pass"))
    code = run(["eval", task, str(wrong), "--remote", server.url, "-o", str(tmp_path / "o3"), "--check"])
    out, err = capfd.readouterr()
    assert code != 0 and "mismatch: largest difference nan" in out + err, out[-3000:] + err[-2000:]


@pytest.mark.parametrize(
    ("task", "right", "wrong", "reason"),
    [
        (
            "rowrange_py",
            "data.amin(dim=1), data.amax(dim=1)",
            "data.amax(dim=1), data.amin(dim=1)",
            "smallest: mismatch",
        ),
        ("rowsum_py", "data.sum(dim=1)", "data.sum(dim=1) + 1", "mismatch"),
    ],
)
def test_a_gpumode_problems_tuple_of_outputs_reaches_its_check_in_its_own_form(
    task: str, right: str, wrong: str, reason: str, server: RunningServer, capfd, tmp_path: Path
) -> None:
    """GPU MODE's tuples of outputs: two (each row's smallest and largest value; the same in the other order
    fail the problem's check on the first), and one (ref_kernel returns (sums,) and check_implementation
    unpacks it: it was handed the bare tensor, "too many values to unpack"). The template passes every
    check, a wrong submission fails the problem's own."""
    task = f"gpumode/cpu_pack/{task}"
    assert run(["init", task, str(tmp_path / "aa"), "--remote", server.url]) == 0
    code = run(["eval", task, str(tmp_path / "aa"), "--remote", server.url, "-o", str(tmp_path / "o1"), "--check"])
    out, err = capfd.readouterr()
    assert code == 0 and "passed: 3/3" in out, (out + err)[-3000:]
    source = (tmp_path / "aa" / "submission.py").read_text()
    assert right in source
    (tmp_path / "wrong.py").write_text(source.replace(right, wrong))
    code = run(
        ["eval", task, str(tmp_path / "wrong.py"), "--remote", server.url, "-o", str(tmp_path / "o2"), "--check"]
    )
    out, err = capfd.readouterr()
    assert code == 1 and reason in out + err, (out + err)[-3000:]


def test_kernelbench_init_inputs_numbers_and_tuples_of_outputs_and_a_result_of_the_wrong_form(
    server: RunningServer, capfd, tmp_path: Path
) -> None:
    """`--check` (correctness only): a constructor argument (1_Scale), a number drawn with the forward's
    inputs (the same in every draw: a worker is given it once) and two outputs (2_SumMax) pass as the
    problem's own Model; a ModelNew that returns one output of two, or a tensor of another shape, fails
    with what it returned."""

    def check(task: str, folder: Path) -> tuple[int, str]:
        code = run(
            ["eval", task, str(folder), "--remote", server.url, "-o", str(tmp_path / f"o-{folder.name}"), "--check"]
        )
        out, err = capfd.readouterr()
        return code, out + err

    for task in ("kernelbench/level1/1_Scale", "kernelbench/level1/2_SumMax"):
        folder = tmp_path / task.rsplit("/", 1)[-1]
        assert run(["init", task, str(folder), "--remote", server.url]) == 0
        capfd.readouterr()
        code, said = check(task, folder)
        assert code == 0 and "passed: 3/3" in said, said[-3000:]

    source = (tmp_path / "2_SumMax" / "solution.py").read_text()
    one = tmp_path / "one"
    one.mkdir()
    (one / "solution.py").write_text(
        source.replace("return x.sum(dim=1) * scale, x.amax(dim=1)", "return x.sum(dim=1)")
    )
    code, said = check("kernelbench/level1/2_SumMax", one)
    assert code != 0 and "returned 1 output(s), the reference returns 2" in said, said[-3000:]
    shape = tmp_path / "shape"
    shape.mkdir()
    (shape / "solution.py").write_text(source.replace("x.amax(dim=1)", "x.amax(dim=1, keepdim=True)"))
    code, said = check("kernelbench/level1/2_SumMax", shape)
    assert code != 0 and "output 1 is torch.float32 [128, 1] on cpu; the reference's is torch.float32 [128]" in said


def test_a_modelnew_whose_weights_are_not_models_is_refused_before_any_call(
    server: RunningServer, capfd, tmp_path: Path
) -> None:
    """KernelBench's models share their weights' seed: a ModelNew that draws its Linear's weights after
    another draw, or names its layer otherwise, is refused with the difference, not timed."""
    task = "kernelbench/level2/1_Linear_Tanh"
    assert run(["init", task, str(tmp_path / "aa"), "--remote", server.url]) == 0
    source = (tmp_path / "aa" / "solution.py").read_text()
    cases = {
        "drawn": (
            source.replace(
                "self.linear = nn.Linear(in_features, out_features)",
                "torch.rand(1)\n        self.linear = nn.Linear(in_features, out_features)",
            ),
            "linear.bias holds other values than Model's",
        ),
        "named": (
            source.replace("self.linear", "self.fc"),
            "lack ['linear.bias', 'linear.weight'] and add ['fc.bias', 'fc.weight']",
        ),
    }
    for name, (text, reason) in cases.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "solution.py").write_text(text)
        code = run(
            ["eval", task, str(tmp_path / name), "--remote", server.url, "-o", str(tmp_path / f"o-{name}"), "--check"]
        )
        out, err = capfd.readouterr()
        assert code != 0 and "is not Model's" in out + err and reason in out + err, (out + err)[-3000:]


def test_a_gpumode_problem_is_warmed_up_with_its_own_template_at_the_start(
    server_factory: Callable[..., RunningServer],
) -> None:
    """`kcoral serve --warm-up TASK` of a pack problem evaluates its native template (GPU MODE's
    submission.py) of the server's own, an A/A request: every check passes (a busy host may leave it
    unscored)."""
    task = "gpumode/cpu_pack/vecadd_py"
    server = server_factory(tasks_dirs=(PACKS,), warm_up=(task,))
    deadline = time.monotonic() + 240
    while (warm := server.http.get("/v1/health").json()["warm_up"][0])["state"] != "finished":
        assert time.monotonic() < deadline, warm
        time.sleep(0.5)
    assert warm["task"] == task and warm["verdict"] in ("ok", "inconclusive"), warm
    # the warm-up is one of the server's A/A requests: its upload is the template as the server packs it
    (report,) = (server.settings.data_dir / "jobs" / warm["job"]).rglob("report.json")
    lines = json.loads(report.read_text())["lines"]
    assert any(line.startswith("calibration: this A/A request") for line in lines), lines
