"""The scheduler: queued jobs onto leases, fairly across tokens, one worker thread per running job.

The loop reads as its steps: recover (once), then repeatedly wait, pick, claim, run, finish.
Each exit of a job is logged. Outcomes are data (RunResult), never exceptions.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from collections.abc import Collection
from dataclasses import replace

from kcoral.protocol.errors import KcoralError
from kcoral.protocol.models import JobState, Verdict
from kcoral.runner.gpuclean import GpuProbe
from kcoral.runner.jobfs import remove_tree
from kcoral.runner.jobrunner import JobRunner, LocalRunner
from kcoral.runner.leases import Lease, Placement
from kcoral.runner.logsetup import job_thread
from kcoral.runner.plan import Executor, RunResult
from kcoral.runner.receipt_keys import KeyRing
from kcoral.runner.receipts import seal
from kcoral.runner.settings import Settings
from kcoral.runner.store import JobPaths, JobRecord, JobStore

log = logging.getLogger("kcoral.scheduler")
UPLOAD_CUT = "the server stopped before this job's upload was complete; its partial upload was removed: submit again"
INTERRUPTED = "the server shut down while this job ran; its container was removed: run it again"


def fair_order(
    queued: list[JobRecord], running: list[JobRecord], last_started: dict[str, float] | None = None
) -> list[JobRecord]:
    """Round-robin over owners, FIFO within one owner. Owners with fewer running jobs go first, then
    those whose last job started longest ago (``last_started``: owner -> start time), so one owner's
    backlog cannot hold a slot against another's single job.

    ``queued`` is in submission order. The result is the order in which jobs will be tried,
    which is also each job's queue position.
    """
    last = last_started or {}
    by_owner: dict[str, list[JobRecord]] = defaultdict(list)
    for job in queued:
        by_owner[job.owner].append(job)
    busy: dict[str, int] = defaultdict(int)
    for job in running:
        busy[job.owner] += 1
    order: list[JobRecord] = []
    queues = sorted(
        by_owner.values(), key=lambda jobs: (busy[jobs[0].owner], last.get(jobs[0].owner, 0.0), queued.index(jobs[0]))
    )
    depth = 0
    while len(order) < len(queued):
        for jobs in queues:
            if depth < len(jobs):
                order.append(jobs[depth])
        depth += 1
    return order


def _remove_partial(paths: JobPaths) -> None:
    """What a job that was running when the server stopped leaves half made: an upload's staged
    files, its raw output folder and the outputs being copied out of it (no result names them), an
    evaluation supervisor's result. Its input and its log stay (a rerun, and what it printed)."""
    for folder in (paths.staging, paths.raw_out, paths.outputs, paths.judge):
        remove_tree(folder)


class Scheduler:
    def __init__(
        self,
        store: JobStore,
        placement: Placement,
        runner: JobRunner,
        settings: Settings,
        keys: KeyRing | None = None,
    ) -> None:
        self.store = store
        #: where claimed jobs run: this host's engine, or a cluster's hosts (runner.jobrunner)
        self.runner = runner
        #: what signs evaluations' receipts (runner.receipts); None: they stay unsigned
        self.keys = keys
        self.settings = settings
        self.placement = placement
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._cancels: dict[str, threading.Event] = {}
        self._workers: dict[str, threading.Thread] = {}
        #: running jobs the server interrupted as it shut down (they end `interrupted`, not `cancelled`)
        self._interrupted: set[str] = set()
        #: results the store could not record yet (a full disk): retried by the loop
        self._unrecorded: dict[str, RunResult] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @classmethod
    def local(
        cls,
        store: JobStore,
        placement: Placement,
        executor: Executor,
        nvml: GpuProbe,
        settings: Settings,
        keys: KeyRing | None = None,
    ) -> Scheduler:
        """A single server's scheduler: its jobs run on this host's engine (runner.jobrunner.LocalRunner)."""
        return cls(store, placement, LocalRunner(store, placement, executor, nvml, settings), settings, keys)

    # --- life cycle -----------------------------------------------------------------------------

    def start(self) -> None:
        followed = self.runner.start(self.store.in_state(JobState.running))
        self.recover({job.id for job in followed})
        self.runner.warm_up()
        self._thread = threading.Thread(target=self._loop, name="kcoral-scheduler", daemon=True)
        self._thread.start()

    @property
    def accepting(self) -> bool:
        """False once the server is shutting down: no new work is taken."""
        return not self._stop.is_set()

    def stop(self, grace_s: float = 0.0) -> None:
        """Stop taking work; give running jobs ``grace_s`` to finish, then interrupt the rest (their
        containers are removed; they end `interrupted`) and wait for them. Queued jobs stay queued
        for the next start. Safe to call more than once."""
        self._stop.set()
        self._wake.set()
        self.runner.detach()  # jobs that run elsewhere run on: the next start follows them again
        if self._thread:
            self._thread.join(10)
        deadline = time.monotonic() + grace_s
        for worker in self._running_workers():
            worker.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            left = [job_id for job_id, w in self._workers.items() if w.is_alive()]
            for job_id in left:
                self._interrupted.add(job_id)
                self._cancels[job_id].set()
        if left:
            log.warning("interrupting %d running job(s): %s", len(left), ", ".join(left))
        for worker in self._running_workers():
            worker.join(60)
        self.runner.close()
        self._record_pending()

    def _running_workers(self) -> list[threading.Thread]:
        with self._lock:
            return list(self._workers.values())

    def wake(self) -> None:
        self._wake.set()

    def recover(self, followed: Collection[str] = ()) -> None:
        """After a restart: jobs that were running are lost (say so), but for those the runner follows
        again (``followed``: they run on elsewhere); their containers and partial files go. A job whose
        upload had begun is ended, its partial upload removed; one still waiting for its upload keeps
        waiting. A store that cannot write (a full disk) leaves the jobs for the next start: the server
        still serves."""
        for job in self.store.in_state(JobState.running):
            if job.id in followed:
                self._attach(job)
                continue
            _remove_partial(self.store.paths(job.id))
            try:
                self.store.finish(
                    job.id,
                    Verdict.infrastructure_error,
                    reason="the server stopped while this job was running; its container was removed",
                )
                log.warning("job %s was running when the server stopped: marked failed", job.id, extra={"job": job.id})
            except KcoralError as exc:
                log.error(
                    "job %s was running when the server stopped; cannot record it: %s",
                    job.id,
                    exc.message,
                    extra={"job": job.id},
                )
        for job in self.store.in_state(JobState.created):
            paths = self.store.paths(job.id)
            if not any(p.exists() for p in (paths.tar, paths.staging, paths.input)):
                continue  # no upload begun: the job still takes one
            paths.tar.unlink(missing_ok=True)  # its upload died with the server
            remove_tree(paths.input)
            remove_tree(paths.staging)
            try:
                self.store.finish_if(job.id, JobState.created, Verdict.infrastructure_error, UPLOAD_CUT)
            except KcoralError as exc:
                log.error(
                    "job %s was waiting for its upload; cannot record it: %s",
                    job.id,
                    exc.message,
                    extra={"job": job.id},
                )
        try:
            removed = self.runner.remove_orphans()
            if removed:
                log.warning("removed %d job container(s) left by an earlier run", removed)
        except Exception as exc:  # Docker down at start-up: /health reports it; jobs will fail clearly
            log.error("orphan clean-up failed: %s", exc)

    # --- the loop -------------------------------------------------------------------------------

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(1.0)
            self._wake.clear()
            try:
                self.store.reserve.refill()  # the disk's room for verdicts, once there is room again
                self._record_pending()
                with self._lock:
                    running = set(self._workers)
                self.runner.tidy(running)
                self._dispatch()
            except Exception:
                log.exception("dispatch failed; retrying")
                time.sleep(1.0)

    def queue_order(self) -> list[JobRecord]:
        queued = self.store.in_state(JobState.queued)
        if not queued:  # the loop asks every second: no queue, no other query
            return []
        return fair_order(queued, self.store.in_state(JobState.running), self.store.last_started())

    def _dispatch(self) -> None:
        engine_asked = False
        for job in self.queue_order():
            lease = self.placement.try_acquire(job.spec.gpus, job.spec.gpu_type, job.spec.cores())
            if lease is None:
                continue
            if not engine_asked:  # asked once a job could start: hold the queue until the runner can run it
                engine_asked = True
                if not self.runner.ready():
                    self.placement.release(lease)
                    return
            if not self._claim(job, lease):
                self.placement.release(lease)
                continue
            worker = threading.Thread(target=self._run, args=(job, lease), name=job_thread(job.id), daemon=True)
            with self._lock:
                self._workers[job.id] = worker
            worker.start()

    def _claim(self, job: JobRecord, lease: Lease) -> bool:
        """Mark the job running on ``lease``; False when it is no longer queued, or when the store
        cannot write (a full disk: it stays queued, its lease goes back)."""
        with self._lock:
            current = self.store.get(job.id)
            if current.state != JobState.queued:
                return False
            try:
                self.store.mark_running(job.id, lease.name, lease.gpus)
            except KcoralError as exc:
                log.error("job %s cannot start: %s", job.id, exc.message, extra={"job": job.id})
                return False
            self._cancels[job.id] = threading.Event()
        log.info("job %s claimed %s", job.id, lease.name, extra={"job": job.id})
        return True

    def _attach(self, job: JobRecord) -> None:
        """A job that runs elsewhere since before the server's restart: followed again."""
        lease = self.runner.lease_of(job)
        worker = threading.Thread(target=self._run, args=(job, lease, True), name=job_thread(job.id), daemon=True)
        with self._lock:
            self._cancels[job.id] = threading.Event()
            self._workers[job.id] = worker
        log.warning(
            "job %s runs on %s since before this start: following it again",
            job.id,
            lease.host or "this host",
            extra={"job": job.id},
        )
        worker.start()

    def _run(self, job: JobRecord, lease: Lease, follow: bool = False) -> None:
        """The job's worker: run by the runner, its result recorded (unless the server stopped first and
        it runs on elsewhere), cleaned up after, its lease let go."""
        result: RunResult | None = RunResult(Verdict.infrastructure_error, reason="the executor crashed")
        try:
            result = self.runner.run(job, lease, self._cancels[job.id], follow)
        except Exception as exc:
            log.exception("job %s: executor crashed", job.id, extra={"job": job.id})
            result = RunResult(Verdict.infrastructure_error, reason=f"executor crashed: {exc}")
        finally:
            try:
                try:
                    if result is not None:
                        if job.id in self._interrupted and result.verdict == Verdict.cancelled:
                            result = replace(result, verdict=Verdict.interrupted, reason=INTERRUPTED)
                        self._record(job.id, self._seal(job.id, result))
                finally:  # after the result (not on the job's critical path), before the lease is free
                    self.runner.after(job.id, lease)
            finally:
                self._let_go(job.id, lease)

    def _let_go(self, job_id: str, lease: Lease) -> None:
        """A job's worker is done with it: its lease is free, the loop looks at the queue again."""
        self.placement.release(lease)
        with self._lock:
            self._cancels.pop(job_id, None)
            self._workers.pop(job_id, None)
        self.wake()

    def _seal(self, job_id: str, result: RunResult) -> RunResult:
        """An evaluation's receipt signed by this server before its result is recorded (runner.receipts)."""
        return seal(self.store, self.keys, job_id, result) if self.keys is not None else result

    def _record(self, job_id: str, result: RunResult) -> None:
        """Store how the job ended; when the store cannot (a full disk), keep it and retry from the loop."""
        try:
            self.store.finish(
                job_id,
                result.verdict,
                result.exit_code,
                result.reason,
                result.outputs,
                result.log_bytes,
                result.steps,
                result.score,
            )
            log.info("job %s finished: %s %s", job_id, result.verdict, result.exit_code, extra={"job": job_id})
        except KcoralError as exc:
            log.error(
                "job %s finished (%s) but cannot be recorded yet: %s",
                job_id,
                result.verdict,
                exc.message,
                extra={"job": job_id},
            )
            with self._lock:
                self._unrecorded[job_id] = result

    def _record_pending(self) -> None:
        with self._lock:
            pending, self._unrecorded = self._unrecorded, {}
        for job_id, result in pending.items():
            self._record(job_id, result)

    # --- requests from the API ------------------------------------------------------------------

    def cancel(self, job_id: str) -> JobRecord:
        job = self.store.get(job_id)
        if job.state in (JobState.queued, JobState.created):
            self.store.finish_if(job.id, job.state, Verdict.cancelled, "cancelled before it ran")
        elif job.state == JobState.running:
            with self._lock:
                event = self._cancels.get(job.id)
            if event:
                event.set()
        return self.store.get(job_id)
