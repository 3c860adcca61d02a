"""The plan runner (runner.runplan) and the python kind's plan, with an in-memory executor: what a
job's result, outputs and log become for each way its containers end. No Docker."""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import threading
import time
from pathlib import Path

import pytest

from kcoral.protocol.errors import InfrastructureError
from kcoral.protocol.models import GpuInfo, ImageInfo, JobState, JobTimes, PythonSpec, SpecBase, Verdict
from kcoral.runner import jobkinds
from kcoral.runner.errors import DISK_FULL_REASON, LOG_DISK_FULL
from kcoral.runner.leases import Lease, Slot
from kcoral.runner.plan import ContainerStep, Finished, JobContext, Outcomes, Plan, RunResult, StepOutcome, judge
from kcoral.runner.runplan import JobRun, run_job
from kcoral.runner.settings import Settings
from kcoral.runner.store import JobPaths, JobRecord
from tests.runner.fake_executor import FakeExecutor, Script, exits


def job(spec: SpecBase) -> JobRecord:
    return JobRecord(id="j1", owner="o", state=JobState.running, spec=spec, times=JobTimes(created=0))


def run(
    tmp_path: Path,
    executor: FakeExecutor,
    spec: SpecBase | None = None,
    lease: Lease | None = None,
    telemetry: object = None,
) -> tuple[RunResult, JobPaths, list[ImageInfo]]:
    paths = JobPaths(tmp_path / "job")
    paths.input.mkdir(parents=True, exist_ok=True)
    pinned: list[ImageInfo] = []
    view = job(spec or PythonSpec(argv=["m.py"], env={"A": "1"}))
    result = run_job(
        JobRun(view, lease or Lease(slots=()), paths, threading.Event(), executor, Settings(), pinned.append, telemetry)  # type: ignore[arg-type]
    )
    return result, paths, pinned


def leaves(files: dict[str, bytes], code: int = 0, link: str | None = None) -> Script:
    def play(job_id: str, steps: list[ContainerStep], cancel: threading.Event, deadline: float) -> list[StepOutcome]:
        out = steps[0].output_dir
        assert out is not None
        for name, data in files.items():
            (out / name).write_bytes(data)
        if link:
            os.symlink("/etc/passwd", out / link)
        return [StepOutcome(None, code, False, 5)]

    return play


def test_python_plan_is_one_step_in_the_sent_directory(tmp_path: Path) -> None:
    executor = FakeExecutor()
    done, paths, pinned = run(tmp_path, executor)
    step = executor.ran[0].steps[0]
    assert step.command == ["python3", "m.py"] and step.working_dir == "/job/input"
    assert step.mounts == {str(paths.input): ("/job/input", "ro")} and step.output_dir == paths.raw_out
    assert step.env["A"] == "1" and step.uid == 65534
    assert [p.ref for p in pinned] == ["kcoral-job:cpu"] and done.verdict == Verdict.ok


def test_a_rerun_runs_on_the_pinned_image(tmp_path: Path) -> None:
    executor = FakeExecutor()
    _, _, pinned = run(tmp_path, executor, PythonSpec(argv=["m.py"], image="sha256:feed"))
    assert pinned[0].ref == "sha256:feed" and executor.ran[0].image == pinned[0].digest


def test_every_step_runs_the_digest_that_was_pinned_not_the_tag(tmp_path: Path) -> None:
    """A tag moved between pinning and starting the containers cannot change what the job ran: the
    executor is handed the pinned digest, the one the job records."""
    executor = FakeExecutor()
    _, _, pinned = run(tmp_path, executor)
    assert pinned[0].digest.startswith("sha256:") and executor.ran[0].image == pinned[0].digest != "kcoral-job:cpu"


def test_outputs_are_collected_once_links_refused_and_the_raw_folder_removed(tmp_path: Path) -> None:
    done, paths, _ = run(tmp_path, FakeExecutor(leaves({"a.txt": b"hi", "b.bin": b"\0" * 10}, link="evil")))
    assert sorted((o.path, o.size) for o in done.outputs) == [("a.txt", 2), ("b.bin", 10)]
    assert (paths.outputs / "a.txt").read_bytes() == b"hi" and not (paths.outputs / "evil").exists()
    assert "output refused: evil" in done.reason and not paths.raw_out.exists()


@pytest.mark.parametrize(
    ("outcome", "verdict", "reason"),
    [
        (StepOutcome(None, 0, False, 0), Verdict.ok, ""),
        (StepOutcome(None, 7, False, 0), Verdict.exit, "exited with code 7"),
        (StepOutcome(None, 137, True, 0), Verdict.memory_limit, "killed at the memory limit"),
        (StepOutcome((Verdict.timeout, "ran past"), 137, True, 0), Verdict.timeout, "ran past"),
        (StepOutcome((Verdict.output_limit, "printed more"), None, False, 0), Verdict.output_limit, "printed more"),
    ],
)
def test_judge_maps_each_ending(outcome: StepOutcome, verdict: Verdict, reason: str) -> None:
    finished = judge(outcome, Settings().limits)
    assert finished.verdict == verdict and reason in finished.reason and finished.exit_code == outcome.exit_code
    assert bool(finished.reason) == bool(reason)


class TwoStepKind:
    """A kind of two containers whose finish writes a document and log lines."""

    def __init__(self, tmp: Path) -> None:
        self.private = tmp / "private"
        self.seen: list[Outcomes] = []

    def validate(self, spec: SpecBase, services: object) -> None:
        pass

    def plan(self, ctx: JobContext) -> Plan:
        self.private.mkdir(exist_ok=True)
        steps = [
            ContainerStep(command=["lead"], env={}, log=ctx.paths.root / "lead.log"),
            ContainerStep(command=["member"], env={}),
        ]
        return Plan(image="img", steps=steps, finish=self.finish, discard=(self.private,))

    def finish(self, outcomes: Outcomes) -> Finished:
        self.seen.append(outcomes)
        return Finished(
            Verdict.exit,
            1,
            "not good enough",
            documents={"report.json": {"score": 2}},
            log_lines=["line one", "line two"],
        )


@pytest.fixture
def two_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> TwoStepKind:
    kind = TwoStepKind(tmp_path)
    monkeypatch.setitem(jobkinds._KINDS, "python", kind)  # python jobs run this kind in these tests
    return kind


def test_finish_decides_writes_documents_and_log_lines_and_private_folders_go(
    tmp_path: Path, two_step: TwoStepKind
) -> None:
    done, paths, _ = run(tmp_path, FakeExecutor(exits(0, 3)), PythonSpec(argv=["x"]))
    (outcomes,) = two_step.seen
    assert [s.exit_code for s in outcomes.steps] == [0, 3] and outcomes.image.ref == "img"
    assert (done.verdict, done.exit_code, done.reason) == (Verdict.exit, 1, "not good enough")
    assert [o.path for o in done.outputs] == ["report.json"] and (paths.outputs / "report.json").read_text()
    assert paths.log.read_text() == "line one\nline two\n" and done.log_bytes == len("line one\nline two\n")
    assert not two_step.private.exists()


def test_a_breach_of_the_group_decides_without_finish(tmp_path: Path, two_step: TwoStepKind) -> None:
    def killed(job_id: str, steps: list[ContainerStep], cancel: threading.Event, deadline: float) -> list[StepOutcome]:
        return [StepOutcome((Verdict.timeout, "the job ran past its timeout and was killed"), 137, False, 0)] * 2

    done, _, _ = run(tmp_path, FakeExecutor(killed), PythonSpec(argv=["x"]))
    assert done.verdict == Verdict.timeout and two_step.seen == [] and not two_step.private.exists()


def test_a_plan_that_cannot_be_made_is_an_infrastructure_error(
    tmp_path: Path, two_step: TwoStepKind, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(ctx: JobContext) -> Plan:
        raise InfrastructureError("the task snapshot of this job has no task x")

    monkeypatch.setattr(two_step, "plan", broken)
    executor = FakeExecutor()
    done, _, pinned = run(tmp_path, executor, PythonSpec(argv=["x"]))
    assert (done.verdict, done.reason) == (Verdict.infrastructure_error, "the task snapshot of this job has no task x")
    assert executor.ran == [] and pinned == []


class Readings:
    def __init__(self) -> None:
        self.asked: list[int] = []

    def telemetry(self, index: int) -> dict[str, float]:
        self.asked.append(index)
        return {"sm_clock_mhz": 1980.0}


def test_gpu_telemetry_is_sampled_while_the_steps_run(tmp_path: Path, two_step: TwoStepKind) -> None:
    def slow(job_id: str, steps: list[ContainerStep], cancel: threading.Event, deadline: float) -> list[StepOutcome]:
        cancel.wait(0.7)
        return [StepOutcome(None, 0, False, 0)] * 2

    readings = Readings()
    gpu = GpuInfo(index=3, uuid="GPU-3", name="fake", memory_total_mib=1)
    run(tmp_path, FakeExecutor(slow), PythonSpec(argv=["x"]), Lease(slots=(Slot("gpu3", gpu, ()),)), readings)
    (outcomes,) = two_step.seen
    assert len(outcomes.telemetry) >= 2 and set(readings.asked) == {3}
    assert outcomes.telemetry[0] == {"sm_clock_mhz": 1980.0}


def test_judge_gives_the_exact_reason() -> None:
    limits = Settings().limits
    assert judge(StepOutcome(None, 7, False, 0), limits).reason == "exited with code 7"
    oom = judge(StepOutcome(None, 137, True, 0), limits)
    assert oom.reason == f"killed at the memory limit ({limits.memory_bytes} bytes)"


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        (137, "killed by SIGKILL (exit 137), not at the memory limit: by something outside the job, or itself"),
        (143, "killed by SIGTERM (exit 143)"),
        (139, "killed by SIGSEGV (exit 139)"),
        (128, "exited with code 128"),
        (255, "exited with code 255"),
    ],
)
def test_a_kill_from_outside_is_told_apart_from_the_memory_limit(code: int, reason: str) -> None:
    """Exit 137 without the engine's OOM flag is a SIGKILL someone else sent, not the memory limit."""
    finished = judge(StepOutcome(None, code, False, 0), Settings().limits)
    assert (finished.verdict, finished.exit_code, finished.reason) == (Verdict.exit, code, reason)


def test_the_plan_types_defaults_are_the_documented_ones() -> None:
    """A step is a job container unless it says otherwise: the job uid, the sent directory as its
    working directory, its own IPC and PID namespaces, the job's log, the server's output budget."""
    step = ContainerStep(command=["c"], env={})
    assert (step.mounts, step.working_dir, step.output_dir, step.name, step.output_budget) == (
        {}, "/job/input", None, "job", None
    )  # fmt: skip
    assert (step.uid, step.cpus, step.cgroup_file, step.hide_cgroups, step.log) == (65534, None, None, False, None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        step.name = "other"  # type: ignore[misc]
    finished = Finished(Verdict.ok)
    assert (finished.exit_code, finished.reason, finished.documents, finished.log_lines) == (None, "", {}, [])
    result = RunResult(Verdict.ok)
    assert (result.exit_code, result.reason, result.log_bytes, result.outputs) == (None, "", 0, [])
    assert Outcomes([], ImageInfo(ref="i")).telemetry == []
    plan = Plan(image="i", steps=[step])
    assert (plan.finish, plan.collect, plan.discard) == (None, None, ())
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.image = "j"  # type: ignore[misc]


def test_refused_outputs_are_named_exactly_and_at_most_twenty(tmp_path: Path) -> None:
    def many_links(job_id: str, steps: list[ContainerStep], cancel: threading.Event, deadline: float
                   ) -> list[StepOutcome]:  # fmt: skip
        out = steps[0].output_dir
        assert out is not None
        for i in range(25):
            os.symlink("/etc/passwd", out / f"l{i:02d}")
        return [StepOutcome(None, 3, False, 0)]

    done, _, _ = run(tmp_path, FakeExecutor(many_links))
    notes = done.reason.split("; ")
    assert notes[0] == "exited with code 3" and len(notes) == 21
    assert notes[1] == "output refused: l00: not a regular file (link, FIFO, socket or device)"


def test_the_deadline_is_the_specs_timeout_from_the_start(tmp_path: Path) -> None:
    executor = FakeExecutor()
    before = time.monotonic()
    run(tmp_path, executor, PythonSpec(argv=["m.py"], timeout_s=42))
    assert before + 42 <= executor.ran[0].deadline <= time.monotonic() + 42


def test_no_log_means_zero_log_bytes(tmp_path: Path) -> None:
    done, paths, _ = run(tmp_path, FakeExecutor())
    assert not paths.log.exists() and done.log_bytes == 0


def test_documents_join_collected_outputs_and_a_missing_private_folder_is_fine(
    tmp_path: Path, two_step: TwoStepKind, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = two_step.plan

    def with_outputs(ctx: JobContext) -> Plan:
        plan = original(ctx)
        steps = [dataclasses.replace(plan.steps[0], output_dir=ctx.paths.raw_out), plan.steps[1]]
        return dataclasses.replace(plan, steps=steps, collect=ctx.paths.raw_out,
                                   discard=(*plan.discard, ctx.paths.root / "never-made"))  # fmt: skip

    monkeypatch.setattr(two_step, "plan", with_outputs)
    done, paths, _ = run(tmp_path, FakeExecutor(leaves({"a.txt": b"hi"})), PythonSpec(argv=["x"]))
    assert sorted(o.path for o in done.outputs) == ["a.txt", "report.json"]
    assert json.loads((paths.outputs / "report.json").read_text()) == {"score": 2}


def test_no_gpu_in_the_lease_means_no_telemetry(tmp_path: Path, two_step: TwoStepKind) -> None:
    readings = Readings()
    run(tmp_path, FakeExecutor(exits(0)), PythonSpec(argv=["x"]), Lease(slots=()), readings)
    assert readings.asked == [] and two_step.seen[0].telemetry == []


def test_a_log_that_stopped_fitting_ends_the_job_for_the_full_disk_without_its_partial_files(tmp_path: Path) -> None:
    """The disk filled while the job printed (a step whose log was lost), even as its deadline came:
    infrastructure_error saying so, and neither its partial log nor its outputs kept."""

    def play(job_id: str, steps: list[ContainerStep], cancel: threading.Event, deadline: float) -> list[StepOutcome]:
        assert steps[0].output_dir is not None
        (steps[0].output_dir / "half.txt").write_bytes(b"half")
        log = steps[0].log or tmp_path / "job" / "log"
        log.write_bytes(b"partial")
        log.with_name("log.streams").write_bytes(b"")
        return [StepOutcome((Verdict.timeout, "ran past"), 137, False, 7, log_lost=True)]

    done, paths, _ = run(tmp_path, FakeExecutor(play))
    assert (done.verdict, done.reason, done.outputs, done.log_bytes) == (
        Verdict.infrastructure_error,
        LOG_DISK_FULL,
        [],
        0,
    )
    assert sorted(p.name for p in paths.root.iterdir()) == ["input"]


def test_a_full_disk_met_by_any_write_for_the_job_ends_it_saying_so(tmp_path: Path) -> None:
    """ENOSPC from wherever the server writes for the job (its folders, a plan's files) is the job's
    infrastructure_error naming the full disk, never an executor crash; the log it printed stays."""

    def play(job_id: str, steps: list[ContainerStep], cancel: threading.Event, deadline: float) -> list[StepOutcome]:
        (tmp_path / "job" / "log").write_bytes(b"whole\n")
        raise OSError(errno.ENOSPC, "No space left on device")

    done, paths, _ = run(tmp_path, FakeExecutor(play))
    assert done.verdict == Verdict.infrastructure_error and done.reason.startswith(DISK_FULL_REASON), done
    assert done.outputs == [] and (paths.log.read_bytes(), done.log_bytes) == (b"whole\n", 6)
