"""The front end's side of a job that runs on a cluster host (runner.cluster.placement): send it, follow it,
collect it. The job's log is copied into the front end's own log file as it grows (so following a
log, offsets and status frames work as on a single server), then its outputs into the job's folder;
the front end records the result as for a local job.

A front end that stops (or is killed) leaves its hosts' jobs running: at its next start it follows
them again from where its copy of the log ends (:meth:`RemoteJobs.attach`). A host that is lost while
a job runs there ends that job ``infrastructure_error``, naming the host.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable

from kcoral.protocol.models import ImageInfo, Verdict
from kcoral.runner.cluster.hostagent import RETURNED, SENT, pack, unpack
from kcoral.runner.cluster.placement import ClusterPlacement
from kcoral.runner.jobfs import remove_tree
from kcoral.runner.joblog import LogWriter
from kcoral.runner.leases import Lease
from kcoral.runner.plan import RunResult
from kcoral.runner.store import JobPaths, JobRecord

log = logging.getLogger("kcoral.remote")
#: what is told the job's image once its host has pinned it
OnImage = Callable[[ImageInfo], None]

#: seconds between the front end's inventories of its hosts (and listings of its jobs there)
REFRESH_S = 1.0
#: seconds a poll may take (it waits up to POLL_WAIT_S for news) before the host counts as lost
POLL_TIMEOUT_S = 60.0
POLL_WAIT_S = 1.0
#: seconds an agent that Ray calls unavailable (not dead) may stay so before its job counts as lost
UNAVAILABLE_S = 60.0
#: seconds a start (the job's files carried to the host) may take
START_TIMEOUT_S = 300.0


class RemoteJobs:
    """Jobs of this front end on the cluster's hosts, and the refresh of the hosts' inventories."""

    def __init__(self, cluster: ClusterPlacement, log_grew: Callable[[str], None] | None = None) -> None:
        self.cluster = cluster
        self.ray = cluster.ray
        #: called with a job's id each time its log here grows (runner.executor.DockerExecutor's, the same)
        self.log_grew = log_grew
        #: job id -> host, for each job this front end runs (or follows) on a host
        self._jobs: dict[str, str] = {}
        self._lock = threading.Lock()
        self._detach = threading.Event()
        self._refresher: threading.Thread | None = None

    # --- life cycle -----------------------------------------------------------------------------

    def start(self, running: list[JobRecord]) -> None:
        """Learn the hosts (telling each which of ``running`` are there), then keep them current."""
        by_host: dict[str, list[str]] = defaultdict(list)
        for job in running:
            by_host[self.cluster.lease_of(job.slot).host].append(job.id)
        with self._lock:
            self._jobs.update({i: h for h, ids in by_host.items() for i in ids})
        self.cluster.refresh(self._listed)
        self._refresher = threading.Thread(target=self._refresh_loop, name="kcoral-hosts", daemon=True)
        self._refresher.start()

    def detach(self) -> None:
        """The front end stops: its followers return (their jobs run on; the next start attaches)."""
        self._detach.set()

    def _refresh_loop(self) -> None:
        while not self._detach.wait(REFRESH_S):
            try:
                self.cluster.refresh(self._listed)
            except Exception:  # noqa: BLE001 - the cluster unreachable for a while: try again
                log.exception("refreshing the cluster's hosts failed")

    def _listed(self, host: str) -> list[str]:
        with self._lock:
            return [i for i, h in self._jobs.items() if h == host]

    # --- a job ----------------------------------------------------------------------------------

    def run(
        self,
        job: JobRecord,
        lease: Lease,
        paths: JobPaths,
        cancel: threading.Event,
        on_image: OnImage,
    ) -> RunResult | None:
        """Start ``job`` on ``lease``'s host and follow it to its end; None when the front end stops
        first (the job runs on there)."""
        with self._lock:
            self._jobs[job.id] = lease.host
        try:
            agent = self.cluster.agent(lease.host)
            payload = pack(paths.root, SENT)
            slots = [s.name for s in lease.slots]
            self.ray.get(agent.start.remote(job, slots, payload, self.cluster.front), timeout=START_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - the host refused or is gone: the job did not start
            self._forget(job.id)
            return RunResult(
                Verdict.infrastructure_error, reason=f"host {lease.host} did not start the job: {_why(exc)}"
            )
        return self.attach(job, lease.host, paths, cancel, on_image)

    def attach(
        self, job: JobRecord, host: str, paths: JobPaths, cancel: threading.Event, on_image: OnImage
    ) -> RunResult | None:
        """Follow ``job`` on ``host`` from the end of the front end's copy of its log."""
        with self._lock:
            self._jobs[job.id] = host
        try:
            result = self._follow(job, host, paths, cancel, on_image)
        except Exception as exc:  # noqa: BLE001 - whatever failed here, the job gets a result
            log.exception("job %s on host %s: following it failed", job.id, host, extra={"job": job.id})
            result = RunResult(Verdict.infrastructure_error, reason=f"following the job on host {host} failed: {exc}")
        if result is not None:
            self._forget(job.id)
        return result

    def _follow(
        self, job: JobRecord, host: str, paths: JobPaths, cancel: threading.Event, on_image: OnImage
    ) -> RunResult | None:
        try:
            agent = self.cluster.agent(host)
        except Exception as exc:  # noqa: BLE001 - no agent of that host now
            return _lost(host, exc)
        pinned, cancelled = False, False
        unanswered: float | None = None  # since when the agent has not answered (it may come back)
        grew = functools.partial(self.log_grew, job.id) if self.log_grew else None
        with LogWriter(paths.log, grew) as writer:
            while True:
                if self._detach.is_set():
                    return None
                if cancel.is_set() and not cancelled:
                    cancelled = True
                    agent.cancel.remote(job.id)
                try:
                    news = self.ray.get(agent.poll.remote(job.id, writer.size, POLL_WAIT_S), timeout=POLL_TIMEOUT_S)
                    unanswered = None
                except Exception as exc:  # noqa: BLE001 - the agent died, its node went, or it does not answer
                    unanswered = unanswered or time.monotonic()
                    if not self._passing(exc) or time.monotonic() - unanswered > UNAVAILABLE_S:
                        return _lost(host, exc)
                    time.sleep(1.0)
                    continue
                if not news.known:
                    return RunResult(
                        Verdict.infrastructure_error,
                        reason=f"host {host} has no such job (its agent was restarted): it did not finish there",
                    )
                for stream, data in news.pieces:
                    writer.append(stream, data)
                if news.image is not None and not pinned:
                    pinned = True
                    on_image(news.image)
                if news.result is not None:
                    break
            size = writer.size
        result: RunResult = news.result
        try:
            returned = self.ray.get(agent.returned.remote(job.id), timeout=START_TIMEOUT_S)
            for name in RETURNED:
                remove_tree(paths.root / name)
            unpack(returned, paths.root)
        except Exception as exc:  # noqa: BLE001
            return _lost(host, exc, "as its outputs were fetched")
        agent.forget.remote(job.id)
        result.log_bytes = size
        return result

    def _passing(self, exc: BaseException) -> bool:
        """Whether Ray says the agent may answer again (unreachable for now), not that it is gone."""
        return isinstance(exc, (self.ray.exceptions.ActorUnavailableError, self.ray.exceptions.GetTimeoutError))

    def _forget(self, job_id: str) -> None:
        with self._lock:
            self._jobs.pop(job_id, None)


def _why(exc: BaseException) -> str:
    """A Ray error's own message, not its traceback (a RayTaskError carries the agent's exception)."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, BaseException):
        exc = cause
    return getattr(exc, "message", None) or str(exc).strip().splitlines()[-1][:500] or type(exc).__name__


def _lost(host: str, exc: BaseException, when: str = "while the job ran") -> RunResult:
    log.error("host %s was lost %s: %s", host, when, exc)
    return RunResult(Verdict.infrastructure_error, reason=f"host {host} was lost {when}: {_why(exc)}")
