"""The scheduler over a real SQLite store and real leases, with an in-memory executor: dispatch,
fairness, cancels, recovery, engine failures, the GPU clean-up check. No Docker; seconds."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kcoral.protocol.errors import InsufficientStorage
from kcoral.protocol.models import GpuInfo, JobKindName, JobState, Verdict, parse_spec
from kcoral.runner import jobkinds
from kcoral.runner.gpus import GpuUsage
from kcoral.runner.leases import LeasePool
from kcoral.runner.plan import ContainerStep, StepOutcome
from kcoral.runner.scheduler import Scheduler
from kcoral.runner.settings import Settings
from kcoral.runner.store import JobRecord, JobStore
from tests.runner.fake_executor import FakeExecutor, exits, runs_until_stopped


class FakeGpus:
    """GPU readings by index; ``after`` is what a GPU reads once a job has run on it."""

    def __init__(self, after: dict[int, GpuUsage] | None = None) -> None:
        self.after = after or {}
        self.reads: dict[int, int] = {}

    def usage(self, index: int) -> GpuUsage:
        self.reads[index] = self.reads.get(index, 0) + 1
        if self.reads[index] > 1 and index in self.after:
            return self.after[index]
        return GpuUsage(processes=(), memory_used_mib=100)

    def telemetry(self, index: int) -> dict[str, float] | None:
        return None


def gpu(index: int) -> GpuInfo:
    return GpuInfo(index=index, uuid=f"GPU-{index}", name="fake", memory_total_mib=1000)


class Rig:
    def __init__(
        self,
        tmp_path: Path,
        executor: FakeExecutor,
        gpus: list[GpuInfo] | None = None,
        cpu_slots: int = 1,
        probe: FakeGpus | None = None,
    ) -> None:
        self.store = JobStore(tmp_path / "data")
        self.pool = LeasePool(gpus or [], cpu_slots, cores=[0, 1])
        self.executor = executor
        self.scheduler = Scheduler.local(self.store, self.pool, executor, probe or FakeGpus(), Settings())

    def submit(self, owner: str = "alice", gpus: int = 0, timeout_s: float = 60, kind: str = "python") -> str:
        spec = parse_spec({"kind": kind, "argv": ["m.py"], "gpus": gpus, "timeout_s": timeout_s})
        job = self.store.create(owner, spec)
        self.store.paths(job.id).input.mkdir()
        self.store.mark_queued(job.id, "sha", 0)
        self.scheduler.wake()
        return job.id

    def wait(self, job_id: str, state: JobState = JobState.finished, timeout: float = 10) -> JobRecord:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            job = self.store.get(job_id)
            if job.state == state:
                return job
            time.sleep(0.01)
        raise AssertionError(f"job {job_id} is {self.store.get(job_id).state}, not {state}")

    def turns(self, count: int, timeout: float = 10) -> None:
        """Wait for ``count`` more turns of the scheduler's loop: each has the executor tidy once, which
        notifies ``executor.turn``; the wait is on that, not on a sleep (a test that then sees nothing
        happened knows the loop looked)."""
        turn = self.executor.turn
        with turn:
            until = len(self.executor.tidied) + count
            while len(self.executor.tidied) < until:
                self.scheduler.wake()
                assert turn.wait(timeout), f"the loop made {len(self.executor.tidied)} of {until} turns"

    def settled(self, timeout: float = 10) -> dict[str, Any]:
        """The pool once every slot is back (free or drained): the GPU check runs after the job's finish."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            pool: dict[str, Any] = self.pool.describe()
            if set(pool["free"]) | set(pool["drained"]) == set(pool["slots"]):
                return pool
            time.sleep(0.01)
        raise AssertionError(f"slots not back: {self.pool.describe()}")


@pytest.fixture
def rigs(tmp_path: Path) -> Iterator[list[Rig]]:
    made: list[Rig] = []
    yield made
    for rig in made:
        rig.scheduler.stop()


def start(rigs: list[Rig], rig: Rig) -> Rig:
    rigs.append(rig)
    rig.scheduler.start()
    return rig


def test_a_job_runs_its_plan_and_finishes_with_the_exit_code(tmp_path: Path, rigs: list[Rig]) -> None:
    rig = start(rigs, Rig(tmp_path, FakeExecutor(exits(3))))
    job = rig.wait(rig.submit())
    assert (job.verdict, job.exit_code, job.reason) == (Verdict.exit, 3, "exited with code 3")
    ran = rig.executor.ran[0]
    assert ran.job_id == job.id and [s.command for s in ran.steps] == [["python3", "m.py"]]
    assert ran.lease.name == "cpu0" and job.slot == "cpu0"
    assert job.image is not None and job.image.ref == "kcoral-job:cpu" and job.image.digest.startswith("sha256:")


def test_one_slot_runs_jobs_one_at_a_time_in_fair_order(tmp_path: Path, rigs: list[Rig]) -> None:
    gate = threading.Event()
    order: list[str] = []

    def play(job_id: str, steps: list[ContainerStep], cancel: threading.Event, deadline: float) -> list[StepOutcome]:
        order.append(job_id)
        gate.wait(5)
        return [StepOutcome(None, 0, False, 0)]

    rig = Rig(tmp_path, FakeExecutor(play))
    ids = [rig.submit("alice"), rig.submit("alice"), rig.submit("bob")]  # queued before the loop starts
    start(rigs, rig)
    first = rig.wait(ids[0], JobState.running)
    assert first.id == ids[0] and rig.store.get(ids[1]).state == JobState.queued
    assert [j.id for j in rig.scheduler.queue_order()] == [ids[2], ids[1]]  # bob has none running: he goes first
    gate.set()
    for job_id in ids:
        assert rig.wait(job_id).verdict == Verdict.ok
    assert order == [ids[0], ids[2], ids[1]]  # and once alice's first is done, bob still goes before her second


def test_cancel_queued_and_running(tmp_path: Path, rigs: list[Rig]) -> None:
    started = threading.Event()
    rig = start(rigs, Rig(tmp_path, FakeExecutor(runs_until_stopped(started))))
    running, queued = rig.submit(), rig.submit()
    assert started.wait(5)
    assert rig.scheduler.cancel(queued).verdict == Verdict.cancelled
    rig.scheduler.cancel(running)
    job = rig.wait(running)
    assert job.verdict == Verdict.cancelled and job.reason == "cancelled by request"
    assert [r.job_id for r in rig.executor.ran] == [running]  # the cancelled queued job never ran
    assert rig.settled()["free"] == ["cpu0"]


def test_timeout_comes_from_the_spec(tmp_path: Path, rigs: list[Rig]) -> None:
    rig = start(rigs, Rig(tmp_path, FakeExecutor(runs_until_stopped())))
    job = rig.wait(rig.submit(timeout_s=0.2))
    assert job.verdict == Verdict.timeout


def test_engine_failure_is_the_jobs_infrastructure_error_and_the_slot_comes_back(
    tmp_path: Path, rigs: list[Rig]
) -> None:
    rig = start(rigs, Rig(tmp_path, FakeExecutor(failing="Docker error: engine gone")))
    job = rig.wait(rig.submit())
    assert job.verdict == Verdict.infrastructure_error and job.reason == "Docker error: engine gone"
    assert rig.settled()["free"] == ["cpu0"]


def test_while_the_engine_is_unreachable_the_queue_is_held_not_failed(tmp_path: Path, rigs: list[Rig]) -> None:
    rig = start(rigs, Rig(tmp_path, FakeExecutor(down=True)))
    job_id = rig.submit()
    rig.turns(3)  # the engine was asked, and did not answer, in loop turns after the submit
    assert rig.executor.asked >= 2
    assert rig.store.get(job_id).state == JobState.queued and rig.executor.ran == []
    rig.executor.down = False
    rig.scheduler.wake()
    assert rig.wait(job_id).verdict == Verdict.ok


def test_the_engine_is_asked_only_when_a_queued_job_could_start(tmp_path: Path, rigs: list[Rig]) -> None:
    started = threading.Event()
    rig = start(rigs, Rig(tmp_path, FakeExecutor(runs_until_stopped(started))))
    running = rig.submit()
    assert started.wait(5)
    queued = rig.submit()  # waits for the one slot
    asked = rig.executor.asked
    rig.turns(5)  # five turns of the loop with a job queued and no slot for it
    assert rig.executor.asked == asked and rig.store.get(queued).state == JobState.queued
    rig.scheduler.cancel(running)
    rig.wait(queued, JobState.running)
    assert rig.executor.asked > asked
    rig.scheduler.cancel(queued)
    rig.wait(queued)


def test_the_loop_has_the_executor_tidy_around_the_running_jobs(tmp_path: Path, rigs: list[Rig]) -> None:
    started = threading.Event()
    rig = start(rigs, Rig(tmp_path, FakeExecutor(runs_until_stopped(started))))
    running = rig.submit()
    assert started.wait(5)
    rig.scheduler.wake()
    with rig.executor.turn:  # each tidy notifies: the wait ends at the turn that saw the running job
        assert rig.executor.turn.wait_for(lambda: {running} in rig.executor.tidied, 5), rig.executor.tidied
    rig.scheduler.cancel(running)
    rig.wait(running)


def test_stop_interrupts_running_jobs_after_the_grace_and_keeps_the_queue(tmp_path: Path) -> None:
    started = threading.Event()
    rig = Rig(tmp_path, FakeExecutor(runs_until_stopped(started)))
    rig.scheduler.start()
    running, queued = rig.submit(), rig.submit()
    assert started.wait(5)
    began = time.monotonic()
    rig.scheduler.stop(grace_s=0.3)
    assert 0.3 <= time.monotonic() - began < 5 and not rig.scheduler.accepting
    job = rig.store.get(running)
    assert (job.state, job.verdict) == (JobState.finished, Verdict.interrupted)
    assert job.reason.startswith("the server shut down while this job ran")
    assert rig.store.get(queued).state == JobState.queued
    assert rig.pool.describe()["free"] == ["cpu0"]


def test_a_result_the_store_cannot_write_is_kept_and_written_later(
    tmp_path: Path, rigs: list[Rig], monkeypatch: pytest.MonkeyPatch
) -> None:
    rig = start(rigs, Rig(tmp_path, FakeExecutor(exits(0))))
    real = rig.store.finish
    full = {"on": True}

    def finish(*args: object, **kwargs: object) -> None:
        if full["on"]:
            raise InsufficientStorage("the server's disk is full: the job database cannot grow")
        real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(rig.store, "finish", finish)
    job_id = rig.submit()
    deadline = time.monotonic() + 5
    while not rig.executor.ran:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert rig.settled()["free"] == ["cpu0"]  # the slot comes back although nothing was recorded
    assert rig.store.get(job_id).state == JobState.running
    full["on"] = False
    assert rig.wait(job_id).verdict == Verdict.ok


def test_a_missing_image_fails_before_any_container(tmp_path: Path, rigs: list[Rig]) -> None:
    rig = start(rigs, Rig(tmp_path, FakeExecutor(images=set())))
    job = rig.wait(rig.submit())
    assert job.verdict == Verdict.infrastructure_error and "kcoral images build" in job.reason
    assert rig.executor.ran == [] and job.image is None


def test_a_kind_this_server_cannot_load_is_a_clear_failure(
    tmp_path: Path, rigs: list[Rig], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delitem(jobkinds._KINDS, "ncu", raising=False)
    monkeypatch.setitem(jobkinds._PLUGINS, JobKindName.ncu, "kcoral.no_such_module:NcuKind")
    rig = start(rigs, Rig(tmp_path, FakeExecutor()))
    job = rig.wait(rig.submit(kind="ncu"))
    assert (
        job.verdict == Verdict.infrastructure_error and job.reason == "job kind 'ncu' is not available on this server"
    )
    assert rig.executor.ran == []


def test_recover_marks_jobs_that_were_running_and_removes_orphans(tmp_path: Path) -> None:
    rig = Rig(tmp_path, FakeExecutor(orphans=2))
    job_id = rig.submit()
    rig.store.mark_running(job_id, "cpu0", [])
    rig.scheduler.recover()
    job = rig.store.get(job_id)
    assert job.state == JobState.finished and job.verdict == Verdict.infrastructure_error
    assert "the server stopped while this job was running" in job.reason and rig.executor.orphans == 0


def test_every_leased_gpu_is_checked_after_the_job(tmp_path: Path, rigs: list[Rig]) -> None:
    """GPU 0 is clean, GPU 1 keeps a process: GPU 1 is drained (not only the first GPU is looked at)."""
    probe = FakeGpus(after={1: GpuUsage(processes=(4242,), memory_used_mib=100)})
    rig = start(rigs, Rig(tmp_path, FakeExecutor(), gpus=[gpu(0), gpu(1)], cpu_slots=0, probe=probe))
    job = rig.wait(rig.submit(gpus=2), timeout=15)
    assert job.verdict == Verdict.ok and [g.index for g in job.gpus] == [0, 1]
    assert rig.settled()["drained"] == {"gpu1": "processes [4242] still on GPU 1 after the job"}


def test_gpu_memory_left_over_the_slack_drains_the_gpu(tmp_path: Path, rigs: list[Rig]) -> None:
    slack = Settings().limits.gpu_memory_slack_mib
    probe = FakeGpus(after={0: GpuUsage(processes=(), memory_used_mib=100 + slack + 1)})
    rig = start(rigs, Rig(tmp_path, FakeExecutor(), gpus=[gpu(0)], cpu_slots=0, probe=probe))
    rig.wait(rig.submit(gpus=1), timeout=15)
    assert "GPU 0 memory in use" in rig.settled()["drained"]["gpu0"]


def test_gpu_memory_within_the_slack_keeps_the_gpu(tmp_path: Path, rigs: list[Rig]) -> None:
    slack = Settings().limits.gpu_memory_slack_mib
    probe = FakeGpus(after={0: GpuUsage(processes=(), memory_used_mib=100 + slack)})
    rig = start(rigs, Rig(tmp_path, FakeExecutor(), gpus=[gpu(0)], cpu_slots=0, probe=probe))
    rig.wait(rig.submit(gpus=1))
    assert rig.settled()["drained"] == {}


def test_recover_ends_a_job_whose_upload_died_with_the_server_and_removes_the_partial_file(tmp_path: Path) -> None:
    """A kill -9 mid-upload left the job `created` for ever (counting against the owner's cap) and
    its partial input.tar and staged files on disk."""
    rig = Rig(tmp_path, FakeExecutor())
    job = rig.store.create("alice", parse_spec({"argv": ["m.py"]}))
    paths = rig.store.paths(job.id)
    paths.tar.write_bytes(b"\0" * 4096)
    paths.staging.mkdir()
    (paths.staging / "512-1048576").write_bytes(b"\0" * 4096)
    rig.scheduler.recover()
    after = rig.store.get(job.id)
    assert (after.state, after.verdict) == (JobState.finished, Verdict.infrastructure_error)
    assert after.reason.startswith("the server stopped before this job's upload was complete")
    assert list(paths.root.iterdir()) == []


def test_recover_leaves_a_job_whose_upload_had_not_begun_waiting_for_it(tmp_path: Path) -> None:
    rig = Rig(tmp_path, FakeExecutor())
    job = rig.store.create("alice", parse_spec({"argv": ["m.py"]}))
    rig.scheduler.recover()
    assert rig.store.get(job.id).state == JobState.created


def test_recover_removes_the_partial_files_of_a_job_that_was_running(tmp_path: Path) -> None:
    rig = Rig(tmp_path, FakeExecutor())
    job_id = rig.submit()
    rig.store.mark_running(job_id, "cpu0", [])
    paths = rig.store.paths(job_id)
    for folder in (paths.raw_out, paths.outputs, paths.judge):
        folder.mkdir(parents=True)
        (folder / "half").write_bytes(b"\0" * 4096)
    paths.log.write_text("printed before the crash\n")
    rig.scheduler.recover()
    assert sorted(p.name for p in paths.root.iterdir()) == ["eval", "input", "log"]
    assert list((paths.root / "eval").iterdir()) == [] and paths.log.read_text() == "printed before the crash\n"


def test_a_job_that_cannot_be_marked_running_on_a_full_disk_stays_queued_and_its_slot_comes_back(
    tmp_path: Path, rigs: list[Rig], monkeypatch: pytest.MonkeyPatch
) -> None:
    rig = Rig(tmp_path, FakeExecutor())
    full, tries = {"on": True}, threading.Semaphore(0)
    real = rig.store.mark_running

    def mark_running(*args: Any) -> None:
        if full["on"]:
            tries.release()
            raise InsufficientStorage("the server's disk is full: the job database cannot grow")
        real(*args)

    monkeypatch.setattr(rig.store, "mark_running", mark_running)
    start(rigs, rig)
    job_id = rig.submit()
    assert tries.acquire(timeout=10) and tries.acquire(timeout=10)  # tried, and tried again on a later pass
    assert rig.store.get(job_id).state == JobState.queued and rig.settled()["free"] == ["cpu0"]
    full["on"] = False
    rig.scheduler.wake()
    assert rig.wait(job_id).verdict == Verdict.ok
