"""NcuKind / IketKind: submit-time checks and the container step they run (stand-in services/executor)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from kcoral.profiling import capabilities, jobs
from kcoral.protocol.errors import BadRequest
from kcoral.protocol.models import (
    GpuInfo,
    IketSpec,
    JobState,
    JobTimes,
    NcuSpec,
    ProfileSpec,
    SanitizerSpec,
    TimelineSpec,
    Verdict,
)
from kcoral.runner.jobkinds import HostFacts, kind_for
from kcoral.runner.leases import Lease
from kcoral.runner.plan import ContainerStep, RunResult, StepOutcome
from kcoral.runner.runplan import JobRun, run_job
from kcoral.runner.settings import Settings
from kcoral.runner.store import JobPaths, JobRecord
from tests.runner.fake_executor import FakeExecutor, Script

CAPS_OK = {
    "source": "host",
    "counters_restricted": False,
    "ncu": {"path": "/usr/local/cuda/bin/ncu", "version": "2025.3.1", "ncu_report": None, "ok": True, "reason": ""},
    "iket": {"path": "/opt/torch/.venv/bin/run-iket", "ok": True, "reason": ""},
    "sanitizer": {"path": "/usr/local/cuda/bin/compute-sanitizer", "version": "2025.3.1.0", "ok": True, "reason": ""},
    "timeline": {"path": "python3", "version": "torch 2.11.0+cu130, CUDA 13.0", "ok": True, "reason": ""},
}


@pytest.fixture
def caps(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    state = {k: (dict(v) if isinstance(v, dict) else v) for k, v in CAPS_OK.items()}
    monkeypatch.setattr(capabilities, "for_server", lambda *a, **k: state)
    return state


def services(gpus: int = 1, **settings: Any) -> HostFacts:
    return HostFacts(
        Settings(**settings),
        (GpuInfo(index=0, uuid="GPU-0", name="fake", memory_total_mib=1),) * gpus,
        lambda ref: True,
    )


def test_kinds_are_found_by_name() -> None:
    assert isinstance(kind_for("ncu"), jobs.NcuKind) and isinstance(kind_for("iket"), jobs.IketKind)


def test_ncu_validate(caps: dict[str, Any]) -> None:
    kind = jobs.NcuKind()
    kind.validate(NcuSpec(argv=["--set", "full", "-c", "1"], command=["python", "x.py"]), services())
    with pytest.raises(BadRequest, match="--export is not allowed"):
        kind.validate(NcuSpec(argv=["--export", "x"], command=["python"]), services())
    with pytest.raises(BadRequest, match="no command"):
        kind.validate(NcuSpec(argv=[]), services())
    with pytest.raises(BadRequest, match="need a GPU"):
        kind.validate(NcuSpec(command=["python"], gpus=0), services())
    with pytest.raises(BadRequest, match="has no GPUs"):
        kind.validate(NcuSpec(command=["python"]), services(gpus=0))
    caps["ncu"].update(ok=False, reason="the NVIDIA driver restricts GPU performance counters to admins")
    with pytest.raises(BadRequest, match="cannot run ncu jobs: the NVIDIA driver restricts"):
        kind.validate(NcuSpec(command=["python"]), services())


def test_iket_validate(caps: dict[str, Any]) -> None:
    kind = jobs.IketKind()
    kind.validate(IketSpec(argv=["profile", "--postprocess", "json"], command=["python", "c.py"]), services())
    with pytest.raises(BadRequest, match="--output-dir is not allowed"):
        kind.validate(IketSpec(argv=["--output-dir", "/x", "profile"], command=["python"]), services())
    caps["iket"].update(ok=False, reason="run-iket is not installed")
    with pytest.raises(BadRequest, match="cannot run iket jobs: run-iket is not installed"):
        kind.validate(IketSpec(argv=["profile"], command=["python"]), services())


def test_commands_use_host_paths_in_toolchain_mode(tmp_path: Path) -> None:
    spec = NcuSpec(argv=["-c", "1"], command=["python", "x.py"])
    image_mode = jobs.NcuKind().command(Settings(), spec)
    assert image_mode[:5] == ["python3", "-m", "kcoral.profiling.run_tool", "ncu", "--report"]
    assert image_mode[image_mode.index("--") + 1] == "ncu"
    venv = tmp_path / "bin"
    venv.mkdir()
    for name in ("python", "run-iket"):
        (venv / name).write_text("#!/bin/sh\n")
        (venv / name).chmod(0o755)
    host = Settings(toolchain_mounts=("/usr",), python=str(venv / "python"))
    ispec = IketSpec(argv=["profile"], command=["python", "c.py"])
    icmd = jobs.IketKind().command(host, ispec)
    assert icmd[0] == str(venv / "python")
    assert icmd[icmd.index("--") + 1 :] == [
        str(venv / "run-iket"),
        "--output-dir",
        "/job/out/.iket-stage",
        "profile",
        "--postprocess",
        "all",
        "--",
        "python",
        "c.py",
    ]
    assert jobs.IketKind().command(Settings(), ispec)[icmd.index("--") + 1] == "run-iket"


def test_profiler_images_in_image_mode_only() -> None:
    assert capabilities.profiler_image(Settings(), "ncu") == "kcoral-ncu:latest"
    assert capabilities.profiler_image(Settings(iket_image="x:1"), "iket") == "x:1"
    assert (
        capabilities.profiler_image(Settings(toolchain_mounts=("/usr",), image="kcoral-toolchain:latest"), "ncu")
        == "kcoral-toolchain:latest"
    )


def writes_ncu_report(exit_code: int) -> Script:
    """The ncu container: leaves the report and its summary in /job/out, exits with ``exit_code``."""

    def play(job_id: str, steps: list[ContainerStep], cancel: Any, deadline: float) -> list[StepOutcome]:
        out = steps[0].output_dir
        assert out is not None
        (out / "report.ncu-rep").write_bytes(b"rep")
        (out / "report.ncu-rep.json").write_text("{}")
        return [StepOutcome(None, exit_code, False, 0)]

    return play


def run(tmp_path: Path, spec: ProfileSpec, executor: FakeExecutor, settings: Settings) -> tuple[RunResult, JobPaths]:
    paths = JobPaths(tmp_path / "job")
    paths.input.mkdir(parents=True)
    job = JobRecord(id="j1", owner="o", state=JobState.running, spec=spec, times=JobTimes(created=0))
    result = run_job(JobRun(job, Lease(slots=()), paths, threading.Event(), executor, settings, lambda image: None))
    return result, paths


@pytest.mark.parametrize("exit_code", [0, 2])
def test_ncu_run_collects_outputs(tmp_path: Path, caps: dict[str, Any], exit_code: int) -> None:
    settings = Settings(data_dir=tmp_path, job_env={"PYTHONPATH": "/site"})
    executor = FakeExecutor(writes_ncu_report(exit_code))
    spec = NcuSpec(argv=["-c", "1"], command=["python", "x.py"], env={"A": "1"})
    result, paths = run(tmp_path, spec, executor, settings)
    assert result.verdict == (Verdict.ok if exit_code == 0 else Verdict.exit) and result.exit_code == exit_code
    assert sorted(o.path for o in result.outputs) == ["report.ncu-rep", "report.ncu-rep.json"]
    assert (paths.outputs / "report.ncu-rep").read_bytes() == b"rep" and not paths.raw_out.exists()
    step = executor.ran[0].steps[0]
    assert step.env["PYTHONPATH"] == "/kcoral:/site" and step.env["A"] == "1" and "CUTE_DSL_NO_CACHE" not in step.env
    assert step.mounts[str(paths.input)] == ("/job/input", "ro")
    assert ("/kcoral/kcoral/profiling", "ro") in step.mounts.values()
    assert step.working_dir == "/job/input" and step.name == "ncu"
    # image mode: the ncu image, not the plain job image
    assert executor.ran[0].image == executor.image_info("kcoral-ncu:latest").digest


def test_iket_run_sets_cute_dsl_no_cache(tmp_path: Path, caps: dict[str, Any]) -> None:
    executor = FakeExecutor()
    spec = IketSpec(argv=["profile"], command=["python", "c.py"], env={"CUTE_DSL_NO_CACHE": "0"})
    run(tmp_path, spec, executor, Settings(data_dir=tmp_path))
    assert executor.ran[0].steps[0].env["CUTE_DSL_NO_CACHE"] == "1"


def test_sanitizer_validate(caps: dict[str, Any]) -> None:
    kind = kind_for("sanitizer")
    assert isinstance(kind, jobs.SanitizerKind)
    kind.validate(SanitizerSpec(argv=["--tool=racecheck"], command=["python", "r.py"]), services())
    with pytest.raises(BadRequest, match="--save is not allowed"):
        kind.validate(SanitizerSpec(argv=["--save=/job/input/x"], command=["python"]), services())
    with pytest.raises(BadRequest, match="not allowed through kcoral"):
        kind.validate(SanitizerSpec(argv=["--injection-path=/x.so"], command=["python"]), services())
    with pytest.raises(BadRequest, match="no command to sanitize"):
        kind.validate(SanitizerSpec(argv=[]), services())
    with pytest.raises(BadRequest, match="need a GPU"):
        kind.validate(SanitizerSpec(command=["python"], gpus=0), services())
    caps["sanitizer"].update(ok=False, reason=capabilities.NO_SANITIZER)
    with pytest.raises(BadRequest, match="cannot run sanitizer jobs: compute-sanitizer .* is not installed"):
        kind.validate(SanitizerSpec(command=["python"]), services())


def test_sanitizer_command_and_image() -> None:
    spec = SanitizerSpec(argv=["--tool=initcheck"], command=["python", "i.py"])
    cmd = jobs.SanitizerKind().command(Settings(), spec)
    assert cmd[:4] == ["python3", "-m", "kcoral.profiling.run_tool", "sanitizer"]
    assert cmd[cmd.index("--") + 1 : cmd.index("--") + 3] == ["compute-sanitizer", "--tool=initcheck"]
    assert cmd[-2:] == ["python", "i.py"]
    assert capabilities.profiler_image(Settings(ncu_image="n:1"), "sanitizer") == "n:1"


def test_sanitizer_run_collects_both_reports(tmp_path: Path, caps: dict[str, Any]) -> None:
    def play(job_id: str, steps: list[ContainerStep], cancel: Any, deadline: float) -> list[StepOutcome]:
        out = steps[0].output_dir
        assert out is not None
        (out / "sanitizer.txt").write_text("========= ERROR SUMMARY: 1 error\n")
        (out / "sanitizer.xml").write_text("<ComputeSanitizerOutput/>")
        return [StepOutcome(None, 86, False, 0)]

    executor = FakeExecutor(play)
    spec = SanitizerSpec(argv=["--tool=memcheck"], command=["python", "x.py"])
    result, paths = run(tmp_path, spec, executor, Settings(data_dir=tmp_path))
    assert result.verdict == Verdict.exit and result.exit_code == 86
    assert sorted(o.path for o in result.outputs) == ["sanitizer.txt", "sanitizer.xml"]
    assert executor.ran[0].steps[0].name == "sanitizer"
    assert executor.ran[0].image == executor.image_info("kcoral-ncu:latest").digest


def test_timeline_validate(caps: dict[str, Any]) -> None:
    kind = kind_for("timeline")
    assert isinstance(kind, jobs.TimelineKind)
    kind.validate(TimelineSpec(argv=["--record-shapes"], command=["python", "two_streams.py", "4"]), services())
    kind.validate(TimelineSpec(command=["python3", "-m", "pkg.bench"]), services())
    with pytest.raises(BadRequest, match="records Python programs only"):
        kind.validate(TimelineSpec(command=["bash", "run.sh"]), services())
    with pytest.raises(BadRequest, match="--nsys is not allowed: Nsight Systems is not available"):
        kind.validate(TimelineSpec(argv=["--nsys"], command=["python", "x.py"]), services())
    with pytest.raises(BadRequest, match="need a GPU"):
        kind.validate(TimelineSpec(command=["python", "x.py"], gpus=0), services())
    caps["timeline"].update(ok=False, reason="the jobs' Python (python3) cannot import torch")
    with pytest.raises(BadRequest, match="cannot run timeline jobs: the jobs' Python .* cannot import torch"):
        kind.validate(TimelineSpec(command=["python", "x.py"]), services())


def test_timeline_runs_the_recorder_in_the_jobs_python_and_image(tmp_path: Path, caps: dict[str, Any]) -> None:
    spec = TimelineSpec(argv=["--with-stack"], command=["python", "-c", "print(1)", "a"])
    host = Settings(toolchain_mounts=("/usr",), python="/opt/venv/bin/python")
    assert jobs.TimelineKind().command(host, spec) == [
        "/opt/venv/bin/python", "-m", "kcoral.profiling.gputrace_record", "--trace", "/job/out/timeline.trace.json",
        "--with-stack", "--", "-c", "print(1)", "a",
    ]  # fmt: skip
    executor = FakeExecutor()
    run(tmp_path, spec, executor, Settings(data_dir=tmp_path, image="kcoral-job:gpu"))
    assert executor.ran[0].image == executor.image_info("kcoral-job:gpu").digest
    assert executor.ran[0].steps[0].name == "timeline"
