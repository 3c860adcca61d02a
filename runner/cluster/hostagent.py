"""One cluster host's side of kcoral (``kcoral agent``): its slots and its Docker engine, and the jobs
a front end started here. Each job runs exactly as on a single server (runner.runplan, the same
hardened containers); the front end copies its log as it grows, then its outputs.

Nothing here imports Ray: runner.cluster puts a HostAgent in a detached named actor, and everything
its methods take and return is plain data. The front end stays the one that decides: which slots a
job gets (:meth:`HostAgent.start` takes exactly those), and which jobs still exist (a job it no longer
lists is cancelled here, :meth:`HostAgent.inventory`).
"""

from __future__ import annotations

import io
import logging
import tarfile
import threading
import time
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from kcoral.protocol.errors import KcoralError
from kcoral.protocol.models import ImageInfo, Verdict
from kcoral.runner.executor import DockerExecutor
from kcoral.runner.gpuclean import leftovers, usage_before
from kcoral.runner.gpus import Nvml, select_gpus
from kcoral.runner.jobfs import remove_tree
from kcoral.runner.joblog import read_pieces
from kcoral.runner.leases import Lease, LeasePool, Slot
from kcoral.runner.logsetup import job_thread
from kcoral.runner.plan import RunResult
from kcoral.runner.runplan import JobRun, run_job
from kcoral.runner.settings import Settings
from kcoral.runner.store import JobPaths, JobRecord, jobs_dir

log = logging.getLogger("kcoral.agent")

#: at most this many log bytes in one poll's answer
POLL_BYTES = 1 << 20
#: a job the front end does not list is cancelled here once it has run this long (a start that
#: crossed the front end's listing in flight is not mistaken for a forgotten one)
UNLISTED_GRACE_S = 30.0
#: seconds an inventory's image digests are kept before the engine is asked again
IMAGES_TTL_S = 10.0
#: what a job's folder sends to its host, and what comes back
SENT = ("input", "snapshot")
RETURNED = ("outputs", "snapshot")


class HostRefused(KcoralError):
    """The host cannot take the job now (draining, the slots are not free); the front end tries again."""

    status = 409
    code = "host_refused"


@dataclass
class HostJob:
    """A job started on this host, until the front end has fetched what it left and forgets it."""

    job: JobRecord
    lease: Lease
    paths: JobPaths
    #: the front end that started it (its data dir's label): only that one's listing can drop it
    front: str = ""
    started: float = field(default_factory=time.monotonic)
    cancel: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)
    image: ImageInfo | None = None
    result: RunResult | None = None


@dataclass
class Poll:
    """A job's news since a log offset."""

    #: False: this host has no such job (it never started here, or the agent was restarted)
    known: bool
    #: (stream, bytes) pieces of the log from the asked offset
    pieces: list[tuple[int, bytes]] = field(default_factory=list)
    image: ImageInfo | None = None
    #: how the job ended, once it has and the pieces reach the end of its log
    result: RunResult | None = None


@dataclass
class Inventory:
    """What a host offers: its slots (GPUs with their type and UUID, CPU slots), which are busy or
    drained, the digests of its images, and whether it takes work."""

    host: str
    node_id: str
    slots: list[Slot]
    #: slot name -> the job running on it
    busy: dict[str, str]
    drained: dict[str, str]
    images: dict[str, str]
    draining: bool
    jobs: list[str]


def pack(root: Path, names: Collection[str]) -> bytes:
    """The folders ``names`` of ``root`` (those that exist) as an uncompressed tar."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in names:
            if (root / name).is_dir():
                tar.add(root / name, arcname=name)
    return buf.getvalue()


def unpack(data: bytes, root: Path) -> None:
    """What :func:`pack` made, into ``root`` (tarfile's ``data`` filter: nothing outside ``root``,
    no device files, no absolute links)."""
    root.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
        tar.extractall(root, filter="data")


class HostAgent:
    """This host's slots and engine, and the jobs started here. Thread-safe: the actor serves calls
    from many threads (a poll waits up to a second)."""

    def __init__(self, settings: Settings, host: str, node_id: str = "", cpu_slot_type: str = "") -> None:
        self.settings = settings
        self.host = host
        self.node_id = node_id
        self.nvml = Nvml()
        self.pool = LeasePool(select_gpus(self.nvml.list(), settings.gpus), settings.cpu_slots, cpu_slot_type)
        self.executor = DockerExecutor(settings)
        removed = self.executor.remove_orphans()  # an earlier agent's: its jobs ended with it
        if removed:
            log.warning("removed %d container(s) an earlier agent of %s left", removed, host)
        remove_tree(jobs_dir(settings.data_dir))
        self.draining = False
        self._image_digests: dict[str, str] = {}
        self._images_at = -IMAGES_TTL_S
        self._jobs: dict[str, HostJob] = {}
        self._lock = threading.Lock()

    # --- what the front end asks ----------------------------------------------------------------

    def inventory(self, listed: Collection[str] | None = None, front: str = "") -> Inventory:
        """This host as it is now. ``listed``: the jobs the front end ``front`` has on this host; any
        other job it started here (older than UNLISTED_GRACE_S) is one it forgot, and is cancelled."""
        if listed is not None:
            self._drop_unlisted(set(listed), front)
        with self._lock:
            jobs = sorted(self._jobs)
            busy = {s.name: i for i, e in self._jobs.items() if not e.done.is_set() for s in e.lease.slots}
        return Inventory(
            host=self.host,
            node_id=self.node_id,
            slots=self.pool.slots(),
            busy=busy,
            drained=self.pool.drained(),
            images=self._images(),
            draining=self.draining,
            jobs=jobs,
        )

    def start(self, job: JobRecord, slots: list[str], payload: bytes, front: str = "") -> bool:
        """Run ``job`` on exactly ``slots`` with the job folder's parts in ``payload`` (:func:`pack`),
        for the front end ``front``. False when it is here already (a front end that asks again starts
        nothing twice)."""
        with self._lock:
            if job.id in self._jobs:
                return False
            if self.draining:
                raise HostRefused(f"host {self.host} is draining: it takes no new jobs")
            lease = self.pool.take(slots)
            if lease is None:
                raise HostRefused(f"host {self.host}: slots {','.join(slots)} are not free")
            entry = HostJob(job, lease, JobPaths(jobs_dir(self.settings.data_dir) / job.id), front)
            self._jobs[job.id] = entry
        try:
            remove_tree(entry.paths.root)
            unpack(payload, entry.paths.root)
        except Exception:
            with self._lock:
                del self._jobs[job.id]
            self.pool.release(lease)
            remove_tree(entry.paths.root)
            raise
        threading.Thread(target=self._run, args=(entry,), name=job_thread(job.id), daemon=True).start()
        log.info("job %s started on %s %s", job.id, self.host, lease.name, extra={"job": job.id})
        return True

    def poll(self, job_id: str, offset: int, wait_s: float = 1.0) -> Poll:
        """The job's log from ``offset`` (waiting up to ``wait_s`` for news), its image once pinned,
        and how it ended once its log has been read to the end."""
        entry = self._get(job_id)
        if entry is None:
            return Poll(known=False)
        deadline = time.monotonic() + wait_s
        while not entry.done.is_set() and _size(entry.paths.log) <= offset and time.monotonic() < deadline:
            entry.done.wait(0.02)
        done = entry.done.is_set()
        pieces = [(p.stream, p.data) for p in read_pieces(entry.paths.log, offset, POLL_BYTES)]
        end = offset + sum(len(d) for _, d in pieces)
        result = entry.result if done and end >= _size(entry.paths.log) else None
        return Poll(known=True, pieces=pieces, image=entry.image, result=result)

    def returned(self, job_id: str) -> bytes:
        """An ended job's outputs (and an evaluation's task snapshot) as a tar (:func:`pack`)."""
        entry = self._get(job_id)
        if entry is None or not entry.done.is_set():
            raise HostRefused(f"job {job_id} has not ended on host {self.host}")
        return pack(entry.paths.root, RETURNED)

    def forget(self, job_id: str) -> None:
        """The front end has all of the job: its folder here goes (a running job is cancelled first)."""
        with self._lock:
            entry = self._jobs.get(job_id)
        if entry is None:
            return
        entry.cancel.set()
        entry.done.wait(120)
        with self._lock:
            self._jobs.pop(job_id, None)
        remove_tree(entry.paths.root)

    def cancel(self, job_id: str) -> None:
        entry = self._get(job_id)
        if entry is not None:
            entry.cancel.set()

    def drain(self) -> tuple[int, int]:
        """Take no new jobs; (the jobs still running here, those ended whose front end has not
        collected them yet)."""
        self.draining = True
        with self._lock:
            running = sum(not e.done.is_set() for e in self._jobs.values())
            return running, len(self._jobs) - running

    def close(self) -> None:
        """The agent stops: running jobs are cancelled (their containers go), standbys go."""
        with self._lock:
            entries = list(self._jobs.values())
        for entry in entries:
            entry.cancel.set()
        for entry in entries:
            entry.done.wait(60)
        self.executor.close()

    # --- here -----------------------------------------------------------------------------------

    def _get(self, job_id: str) -> HostJob | None:
        with self._lock:
            return self._jobs.get(job_id)

    def _run(self, entry: HostJob) -> None:
        job = entry.job
        before = usage_before(self.nvml, entry.lease)
        result = RunResult(Verdict.infrastructure_error, reason=f"host {self.host}: the executor crashed")

        def pinned(image: ImageInfo) -> None:
            entry.image = image

        try:
            run = JobRun(job, entry.lease, entry.paths, entry.cancel, self.executor, self.settings, pinned, self.nvml)
            result = run_job(run)
        except Exception as exc:
            log.exception("job %s: executor crashed", job.id, extra={"job": job.id})
            result = RunResult(Verdict.infrastructure_error, reason=f"host {self.host}: executor crashed: {exc}")
        finally:
            try:
                self.executor.remove_exited(job.id)
                slack = self.settings.limits.gpu_memory_slack_mib
                for index, reason in leftovers(self.nvml, entry.lease, before, slack).items():
                    log.error("draining gpu%d: %s", index, reason)
                    self.pool.drain(f"gpu{index}", reason)
            finally:
                self.pool.release(entry.lease)
                entry.result = result
                entry.done.set()
                log.info("job %s ended on %s: %s", job.id, self.host, result.verdict, extra={"job": job.id})

    def _drop_unlisted(self, listed: set[str], front: str) -> None:
        now = time.monotonic()
        with self._lock:
            stale = [
                e
                for i, e in self._jobs.items()
                if e.front == front and i not in listed and now - e.started > UNLISTED_GRACE_S
            ]
        for entry in stale:
            log.warning(
                "job %s is not the front end's any more: cancelled and removed",
                entry.job.id,
                extra={"job": entry.job.id},
            )
            self.forget(entry.job.id)

    def _images(self) -> dict[str, str]:
        """The digest of each image this host's jobs may run on (those present), asked of the engine
        at most every IMAGES_TTL_S (an inventory is asked every second)."""
        if time.monotonic() < self._images_at + IMAGES_TTL_S:
            return self._image_digests
        found = {}
        for ref in dict.fromkeys((self.settings.image, self.settings.ncu_image, self.settings.iket_image)):
            try:
                found[ref] = self.executor.image_info(ref).digest
            except KcoralError:
                continue
        self._image_digests, self._images_at = found, time.monotonic()
        return found


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0
