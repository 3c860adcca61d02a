"""Where a claimed job runs: the scheduler's one interface to it. :class:`LocalRunner` runs jobs on this
host's Docker engine; a cluster's front end has runner.cluster.runner.RayRunner instead, which runs
them on the cluster's hosts. The scheduler queues, claims, records and frees; a runner runs, and says
what it needs before and after (the engine's answer, the GPUs' clean-up).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection
from typing import Protocol

from kcoral.protocol.errors import KcoralError
from kcoral.runner.gpuclean import GpuProbe, leftovers, usage_before
from kcoral.runner.gpus import GpuUsage
from kcoral.runner.jobkinds import python_step
from kcoral.runner.leases import Lease, Placement
from kcoral.runner.plan import Executor, RunResult
from kcoral.runner.runplan import JobRun, run_job
from kcoral.runner.settings import Settings
from kcoral.runner.store import JobRecord, JobStore

log = logging.getLogger("kcoral.scheduler")

#: the job id whose folders a warm-up standby takes its shape from (no job has it: ids are dated)
WARM_UP_JOB = "warm-up"


class JobRunner(Protocol):
    """Runs claimed jobs on their leases, for the scheduler (runner.scheduler)."""

    def start(self, running: list[JobRecord]) -> list[JobRecord]:
        """At the server's start, of the jobs the store has running: those that run on (elsewhere) and
        are followed again; the scheduler ends the others as lost."""
        ...

    def lease_of(self, job: JobRecord) -> Lease:
        """A followed job's lease, held again."""
        ...

    def warm_up(self) -> None:
        """Made ready for the first jobs (standby containers), where that applies."""
        ...

    def ready(self) -> bool:
        """Whether a job can start now (this host's engine answers); asked before one is claimed."""
        ...

    def run(self, job: JobRecord, lease: Lease, cancel: threading.Event, follow: bool = False) -> RunResult | None:
        """The job run to its end (``follow``: a job that runs since before the server's start, followed
        again); None when the server stopped first and the job runs on (its result is not recorded)."""
        ...

    def after(self, job_id: str, lease: Lease) -> None:
        """Once the job's result is recorded and before its lease is free: what it left is cleaned up."""
        ...

    def tidy(self, running: Collection[str]) -> None:
        """Each turn of the scheduler's loop: what was left behind by jobs not ``running`` goes."""
        ...

    def remove_orphans(self) -> int:
        """At the start: what an earlier run of the server left; how many."""
        ...

    def detach(self) -> None:
        """The server stops taking work: jobs that run on elsewhere are left running."""
        ...

    def close(self) -> None:
        """The server stops: its connections go."""
        ...


class LocalRunner:
    """Jobs in containers on this host's Docker engine (runner.executor), their GPUs checked after."""

    def __init__(
        self, store: JobStore, placement: Placement, executor: Executor, nvml: GpuProbe, settings: Settings
    ) -> None:
        self.store = store
        self.placement = placement
        self.executor = executor
        self.nvml = nvml
        self.settings = settings
        #: each running job's GPUs as they were before it (runner.gpuclean)
        self._before: dict[str, dict[int, GpuUsage | None]] = {}
        self._lock = threading.Lock()

    def start(self, running: list[JobRecord]) -> list[JobRecord]:
        return []  # a job of this host's ran in a container that is gone with the server

    def lease_of(self, job: JobRecord) -> Lease:
        raise AssertionError("this host's runner follows no job across a start")

    def warm_up(self) -> None:
        """Each slot's standby for a python job on the default image (runner.standby), so the first
        job after a start does not wait for its container either. Nothing when the image is absent."""
        if not self.settings.standby:
            return
        try:
            image = self.executor.image_info(self.settings.image)
        except KcoralError:
            return
        step = python_step(self.settings, self.store.paths(WARM_UP_JOB), [], {})
        for lease in self.placement.slot_leases():
            self.executor.prewarm(WARM_UP_JOB, image.digest or image.ref, step, lease)

    def ready(self) -> bool:
        return self.executor.reachable()

    def run(self, job: JobRecord, lease: Lease, cancel: threading.Event, follow: bool = False) -> RunResult:
        with self._lock:
            self._before[job.id] = usage_before(self.nvml, lease)
        return run_job(
            JobRun(
                job,
                lease,
                self.store.paths(job.id),
                cancel,
                self.executor,
                self.settings,
                lambda image: self.store.set_image(job.id, image),
                self.nvml,
                self.store,
            )
        )

    def after(self, job_id: str, lease: Lease) -> None:
        """Its exited containers removed (after the result: not on the job's critical path); no process
        left on any of its GPUs and their memory back to what it was, else that GPU is drained."""
        with self._lock:
            before = self._before.pop(job_id, {})
        try:
            self.executor.remove_exited(job_id)
        finally:
            slack = self.settings.limits.gpu_memory_slack_mib
            for index, reason in leftovers(self.nvml, lease, before, slack).items():
                log.error("draining gpu%d: %s", index, reason)
                self.placement.drain(f"gpu{index}", reason)

    def tidy(self, running: Collection[str]) -> None:
        self.executor.tidy(set(running))

    def remove_orphans(self) -> int:
        return self.executor.remove_orphans()

    def detach(self) -> None:
        pass

    def close(self) -> None:
        self.executor.close()
