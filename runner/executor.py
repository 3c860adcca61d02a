"""The Docker executor (runner.plan.Executor): runs a job's containers through docker-py: create, start,
watch, kill, remove.

Docker errors are translated here and in runner.member (the threads around one container) and
nowhere else. The deadline is enforced by this module (``container.wait(timeout=...)`` is only an
HTTP timeout): each member's waiter thread reports its exit, its log thread copies its output into
the job's log file up to its cap (runner.member), and the watch loop here kills the group on the
deadline, a cancel, a log flood or an output-directory breach. Standby containers are
runner.takeover's; a group started side by side, runner.sidebyside's.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import threading
import time
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import docker
import docker.errors

from kcoral.protocol.errors import InfrastructureError
from kcoral.protocol.models import ImageInfo, StepTimes, Verdict
from kcoral.runner.archive import dir_usage
from kcoral.runner.containers import DOCKER_ERRORS, prepare_output_dir, remove, rename
from kcoral.runner.enginelog import ContainerOutput
from kcoral.runner.jobcgroup import JobCgroup, pressure_stalls
from kcoral.runner.jobcgroup import prepare as prepare_job_cgroup
from kcoral.runner.joblog import LogWriter
from kcoral.runner.leases import Lease
from kcoral.runner.member import Member, open_log, settle_breach
from kcoral.runner.plan import ContainerStep, StepOutcome
from kcoral.runner.sandbox import LABEL_INSTANCE, LABEL_JOB, container_options
from kcoral.runner.settings import Settings
from kcoral.runner.sidebyside import raise_first, side_by_side
from kcoral.runner.standby import LABEL_SLOT, LABEL_STANDBY, Fit
from kcoral.runner.takeover import StandbyTakeover

log = logging.getLogger("kcoral.executor")
#: seconds the other members of a group get to leave by themselves after the leader exited
GROUP_GRACE_S = 5.0
#: the pause before asking an unreachable engine again, doubled each time up to the second
RECONNECT_FIRST_S = 1.0
RECONNECT_MAX_S = 30.0


class DockerExecutor:
    """Runs job containers on the Docker engine. An engine that cannot be reached (at start, or lost
    later) is asked again with a growing pause (up to RECONNECT_MAX_S); containers that could not be
    removed while it was gone are removed once it answers again (:meth:`tidy`)."""

    def __init__(self, settings: Settings, log_grew: Callable[[str], None] | None = None) -> None:
        self.settings = settings
        #: called with a job's id each time its log grows (the server wakes the job's followers:
        #: runner.changes, runner.api): a followed log is read when it has new bytes, not polled
        self.log_grew = log_grew
        self._gpu_mode: str | None = None
        self._cgroup_mount: tuple[str, str] | None = None
        self._job_cgroup: JobCgroup | None = None
        self.client: docker.DockerClient | None = None
        self.error = ""
        self._pause = RECONNECT_FIRST_S
        self._retry_at = 0.0
        #: containers were left behind (the engine was gone when they should have been removed)
        self.orphans_pending = False
        #: per job: its containers that had exited when run_group returned, removed by
        #: :meth:`remove_exited` once the job's result is kept (their removal is not on its critical path)
        self._exited: dict[str, list[Any]] = {}
        self._exited_lock = threading.Lock()
        #: containers started ahead of time for the next job of each lease (runner.standby)
        self.standbys = (
            StandbyTakeover(settings, self._create, self._attach_stdin, self._left_behind) if settings.standby else None
        )
        self._connect()

    def close(self) -> None:
        """The server stops: the standby containers go (running jobs' containers are the scheduler's),
        then the engine's connections (a server in a process that goes on, as in the tests, would
        keep its pool's sockets open otherwise)."""
        if self.standbys is not None:
            self.standbys.close()
        if self.client is not None:
            with contextlib.suppress(*DOCKER_ERRORS):
                self.client.close()

    # --- engine facts ---------------------------------------------------------------------------

    def _connect(self) -> None:
        try:
            self.client = docker.from_env(timeout=120, max_pool_size=64)
        except DOCKER_ERRORS as exc:
            self.error = f"cannot reach the Docker engine: {exc}; retrying every {self._pause:g} s at most"
            self._retry_at = time.monotonic() + self._pause
            self._pause = min(self._pause * 2, RECONNECT_MAX_S)
            log.error("%s", self.error)
        else:
            if self.error:
                log.warning("the Docker engine answers again")
                self.orphans_pending = True  # what an earlier run or the outage left
            self.error = ""
            self._pause = RECONNECT_FIRST_S

    def _api(self) -> docker.DockerClient:
        if self.client is None and time.monotonic() >= self._retry_at:
            self._connect()
        if self.client is None:
            raise InfrastructureError(self.error)
        return self.client

    def reachable(self) -> bool:
        """Whether the engine answers now (a ping); the scheduler holds the queue while it does not."""
        try:
            return bool(self._api().ping())
        except (InfrastructureError, *DOCKER_ERRORS):
            return False

    def tidy(self, running: set[str]) -> None:
        """Remove the containers left behind while the engine was gone (not those of ``running`` jobs)."""
        if not self.orphans_pending or not self.reachable():
            return
        self.orphans_pending = False  # set again by what fails from here on (or is left for later)
        try:
            removed = self.remove_orphans(keep=running)
        except InfrastructureError as exc:
            log.warning("%s", exc.message)
            return
        if removed:
            log.warning("removed %d job container(s) left while the engine was unreachable", removed)

    def engine(self) -> dict[str, Any]:
        """Docker reachability and version, for /health."""
        try:
            info = self._api().info()
            if self._job_cgroup is None:
                version, driver = str(info.get("CgroupVersion", "")), str(info.get("CgroupDriver", ""))
                self._job_cgroup = prepare_job_cgroup(self.settings.job_cgroup, version, driver)
            return {
                "ok": True,
                "version": info.get("ServerVersion", ""),
                "runtimes": sorted(info.get("Runtimes", {})),
                "cgroup": info.get("CgroupVersion", ""),
                "cgroup_driver": info.get("CgroupDriver", ""),
                "storage": info.get("Driver", ""),
                "job_cgroup": self._job_cgroup.describe(),
                "job_cpu_weight": bool(self._job_cgroup.parent),
                "pressure_stalls": pressure_stalls(str(info.get("CgroupVersion", ""))),
            }
        except (InfrastructureError, *DOCKER_ERRORS) as exc:
            return {"ok": False, "error": str(exc)}

    def gpu_mode(self) -> str:
        """How GPUs reach containers: the NVIDIA runtime where installed, else device nodes.

        Asked of the engine once (the engine's runtimes do not change under a running server),
        not on every job; an engine that cannot be asked is asked again next time.
        """
        if self.settings.gpu_mode != "auto":
            return self.settings.gpu_mode
        if self._gpu_mode is None:
            engine = self.engine()
            if not engine.get("ok"):
                return "devices"
            self._gpu_mode = "runtime" if "nvidia" in engine.get("runtimes", []) else "devices"
        return self._gpu_mode

    def job_cgroup(self) -> JobCgroup:
        """The job containers' parent cgroup (runner.jobcgroup), made once the engine first answers."""
        if self._job_cgroup is None:
            self.engine()
        return self._job_cgroup or JobCgroup(reason="the engine does not answer")

    def cgroup_mount(self) -> tuple[str, str] | None:
        """(host folder that holds the job containers' cgroups, cgroup version "1" or "2"), for the
        evaluation supervisor's watch over the candidate's CPU time; None where it cannot be found.
        Asked of the engine once it has been found (the engine's cgroup setup does not change under a
        running server), not on every evaluation."""
        if self._cgroup_mount is None:
            self._cgroup_mount = self._find_cgroup_mount()
        return self._cgroup_mount

    def cgroup_leaf(self, container_id: str) -> str:
        """The folder of a container's cgroup under :meth:`cgroup_mount`'s, as the engine names it
        (systemd's driver: a scope; the cgroupfs driver: the container's id); "" where unknown."""
        if self.cgroup_mount() is None:
            return ""
        return f"docker-{container_id}.scope" if self.engine().get("cgroup_driver") == "systemd" else container_id

    def _find_cgroup_mount(self) -> tuple[str, str] | None:
        engine = self.engine()
        version, driver = str(engine.get("cgroup", "")), engine.get("cgroup_driver", "")
        parent = self.job_cgroup().parent.strip("/") or ("system.slice" if driver == "systemd" else "docker")
        if version == "2":
            folder = f"/sys/fs/cgroup/{parent}"
        elif version == "1":
            hierarchy = next((h for h in ("cpuacct", "cpu,cpuacct") if os.path.isdir(f"/sys/fs/cgroup/{h}")), None)
            if hierarchy is None:
                return None
            folder = f"/sys/fs/cgroup/{hierarchy}/{parent}"
        else:
            return None
        try:
            os.makedirs(folder, exist_ok=True)  # the engine makes it at its first container; the mount needs it now
        except OSError:
            return None
        return folder, version

    def image_info(self, ref: str) -> ImageInfo:
        try:
            image = self._api().images.get(ref)
        except docker.errors.ImageNotFound:
            raise InfrastructureError(f"job image {ref} is not present: run `kcoral images build`") from None
        except DOCKER_ERRORS as exc:
            raise InfrastructureError(f"cannot inspect image {ref}: {exc}") from None
        digests = image.attrs.get("RepoDigests") or []
        return ImageInfo(ref=ref, digest=digests[0] if digests else image.id)

    def has_image(self, ref: str) -> bool:
        """Whether ``ref`` is present in the engine (False too when the engine cannot be asked)."""
        try:
            self.image_info(ref)
        except InfrastructureError:
            return False
        return True

    def remove_orphans(self, keep: Collection[str] = ()) -> int:
        """Remove containers this server instance left behind (found by label), but those of the
        jobs in ``keep`` (running now) and the standbys the pool holds. A standby of a lease whose
        standby is being started is left for a later tidy (it may be the one being started)."""
        try:
            label = f"{LABEL_INSTANCE}={self.settings.instance}"
            found = self._api().containers.list(all=True, filters={"label": label})
            held, making = self.standbys.in_use() if self.standbys is not None else (set(), set())
            left = [c for c in found if _job_of(c) not in keep and c.id not in held]
            gone = [c for c in left if not _starting(c, making)]
            if len(gone) < len(left):
                self.orphans_pending = True
            for c in gone:
                c.remove(force=True)
            return len(gone)
        except (InfrastructureError, *DOCKER_ERRORS) as exc:
            self.orphans_pending = True  # tried again once the engine answers
            raise InfrastructureError(f"cannot clean up old job containers: {exc}") from None

    # --- one job ------------------------------------------------------------------------------

    def run_group(
        self,
        job_id: str,
        image: str,
        steps: list[ContainerStep],
        lease: Lease,
        deadline: float,
        cancel: threading.Event,
        job_log: Path,
    ) -> list[StepOutcome]:
        """Run containers side by side on one lease; the first leads, each in namespaces of its own
        (they meet only through the folders their steps mount). The group ends when the
        leader exits: the others get a moment to leave by themselves, then are killed. A breach of
        any member (deadline, cancel, a log flood, an output budget) kills them all.
        """
        started: list[Member] = []
        logs: dict[Path, LogWriter] = {}
        refill: tuple[Fit, dict[str, object]] | None = None
        try:
            for step in steps:
                path = step.log or job_log
                if path not in logs:
                    grew = functools.partial(self.log_grew, job_id) if self.log_grew and path == job_log else None
                    logs[path] = open_log(path, grew)
            every = [
                container_options(self.settings, job_id, image, s, lease, self.gpu_mode(), self.job_cgroup().parent)
                for s in steps
            ]
            if len(steps) == 1:
                (step,), (options,) = steps, every
                fits = self.standbys.fit(job_id, options) if self.standbys is not None else None
                self._start_member(job_id, step, options, lease, fits, logs[step.log or job_log], started)
                if fits is not None:
                    refill = (fits, options)
            else:
                self._start_together(steps, every, [logs[s.log or job_log] for s in steps], started)
            killed = self._watch(started, deadline, cancel)
            return [self._settle(m, killed) for m in started]
        except DOCKER_ERRORS as exc:
            raise InfrastructureError(f"Docker error: {exc}") from None
        finally:
            self._release(job_id, started)
            for writer in logs.values():
                writer.close()
            if refill is not None and self.standbys is not None:
                self.standbys.refill(lease, *refill)

    def _start_member(
        self,
        job_id: str,
        step: ContainerStep,
        options: dict[str, object],
        lease: Lease,
        fits: Fit | None,
        log: LogWriter,
        started: list[Member],
    ) -> None:
        """One step's container running, added to ``started`` as soon as it exists (whatever fails after,
        the group's clean-up finds it): a ready standby that ``fits`` taken over (renamed for the job),
        else one created and started, its output attached before the start."""
        taken = self.standbys.take(job_id, lease, fits, options) if self.standbys and fits else None
        if fits is not None and taken is not None:
            member = Member(step, taken[0].container, log, standby=(fits, taken[0]), output=taken[1])
            started.append(member)
        else:
            if step.output_dir is not None:
                prepare_output_dir(step.output_dir, step.uid)
            member = Member(step, self._create(options), log)
            started.append(member)
            self._attach(member)
            member.container.start()
        self._begin(member)
        if member.standby is not None:  # it runs the job already: the job's name follows
            rename(member.container, f"kcoral-{job_id}")

    def _start_together(
        self,
        steps: list[ContainerStep],
        options: list[dict[str, object]],
        logs: list[LogWriter],
        started: list[Member],
    ) -> None:
        """A group's containers created side by side, then started side by side (each of the engine's
        round trips, ~0.1-0.2 s on a two-core host, overlaps the others': an evaluation's supervisor and
        candidate worker start together), each in ``started`` in the steps' order as soon as it exists;
        the first failure is raised once every call has returned (the group's clean-up finds the rest)."""
        for step in steps:
            if step.output_dir is not None:
                prepare_output_dir(step.output_dir, step.uid)
        made = side_by_side([functools.partial(self._create, o) for o in options])
        members = [
            Member(step, container, log)
            for step, container, log in zip(steps, made, logs, strict=True)
            if not isinstance(container, BaseException)
        ]
        started.extend(members)
        raise_first(made)
        for member in members:
            self._attach(member)
        raise_first(side_by_side([m.container.start for m in members]))
        for member in members:
            self._begin(member)

    def _attach(self, member: Member) -> None:
        """Before a created container starts: its cgroup named where its step wants it, its output attached
        (from before the start, it has every byte)."""
        if member.step.cgroup_file is not None:
            _write_cgroup_file(member.step.cgroup_file, self.cgroup_leaf(member.container.id))
        member.output = ContainerOutput(member.container)

    def _begin(self, member: Member) -> None:
        """A running member's watch: when it started, its log's budget, the threads that follow it."""
        member.watch.started = time.time()
        member.begin(self.settings.limits.log_bytes)

    def _release(self, job_id: str, started: list[Member]) -> None:
        """After a group: each member's output let go, its container removed (an exited one after the
        result: :meth:`remove_exited`), a taken standby given back."""
        exited = []
        for member in reversed(started):
            if member.output is not None and not member.threads:  # never read: its attach is let go
                member.output.close()
            if member.watch.exited.is_set():  # nothing runs in it: removed after the result
                exited.append(member.container)
            elif not remove(member.container):
                self.orphans_pending = True
            if member.standby is not None and self.standbys is not None:
                self.standbys.give_back(*member.standby)
        if exited:
            with self._exited_lock:
                self._exited.setdefault(job_id, []).extend(exited)

    def remove_exited(self, job_id: str) -> None:
        """Remove the containers of ``job_id`` that run_group left because they had exited."""
        with self._exited_lock:
            containers = self._exited.pop(job_id, [])
        for container in containers:
            if not remove(container):
                self.orphans_pending = True

    # --- standby containers (runner.standby) ---------------------------------------------------------

    def prewarm(self, job_id: str, image: str, step: ContainerStep, lease: Lease) -> None:
        """Start ``lease``'s standby for containers like ``step`` (of a job ``job_id`` that need not
        exist: its folders are only the shape), in the background."""
        if self.standbys is None:
            return
        options = container_options(
            self.settings, job_id, image, step, lease, self.gpu_mode(), self.job_cgroup().parent
        )
        fits = self.standbys.fit(job_id, options)
        if fits is not None:
            self.standbys.refill(lease, fits, options)

    def _attach_stdin(self, container_id: str) -> Any:
        """A container's stdin, open for writing (docker-py's attach socket)."""
        return self._api().api.attach_socket(container_id, params={"stdin": 1, "stream": 1})

    def _left_behind(self) -> None:
        """A container the engine did not remove: the next tidy does."""
        self.orphans_pending = True

    def _create(self, options: dict[str, object]) -> Any:
        """A container made with ``options``. A create whose answer was lost (not refused: the
        engine may have made it) leaves the instance's containers to the next tidy."""
        try:
            return self._api().containers.create(**options)
        except docker.errors.APIError:
            raise
        except DOCKER_ERRORS:
            self.orphans_pending = True
            raise

    def _settle(self, member: Member, killed: tuple[Verdict, str] | None) -> StepOutcome:
        """How one member ended, once its log is complete."""
        watch = member.watch
        member.complete_log()
        killed = settle_breach(killed, watch.log_over, self.settings.limits.log_bytes)
        if killed is None and (watch.log_error or watch.log_cut):
            killed = (Verdict.infrastructure_error, watch.log_error or watch.log_cut)
        try:
            member.container.reload()
            state = member.container.attrs.get("State", {})
        except DOCKER_ERRORS:
            if killed is None or killed[0] is not Verdict.infrastructure_error:
                raise
            state = {}  # the engine is gone: the job ends for the reason already known
        exit_code = watch.exit_status if watch.exit_status is not None else state.get("ExitCode")
        ended = watch.ended or time.time()
        times = StepTimes(name=member.step.name, started=watch.started or ended, ended=ended)
        return StepOutcome(
            killed, exit_code, bool(state.get("OOMKilled")), watch.log_bytes, times, log_lost=watch.disk_full
        )

    def _watch(self, members: list[Member], deadline: float, cancel: threading.Event) -> tuple[Verdict, str] | None:
        """Wait for the leader's exit; kill every member on a breach and say which. None when the
        leader ended by itself (the others are then given a grace period, and killed after it)."""
        limits = self.settings.limits
        leader = members[0].watch
        while not leader.exited.wait(limits.output_poll_s):
            breach = self._breach(members, deadline, cancel)
            if breach:
                for m in members:
                    _kill(m.container)
                return breach
        grace = time.monotonic() + GROUP_GRACE_S
        for m in members[1:]:
            if not m.watch.exited.wait(max(0.0, grace - time.monotonic())):
                _kill(m.container)
        return None

    def _breach(self, members: list[Member], deadline: float, cancel: threading.Event) -> tuple[Verdict, str] | None:
        limits = self.settings.limits
        if cancel.is_set():
            return (Verdict.cancelled, "cancelled by request")
        if time.monotonic() >= deadline:
            return (Verdict.timeout, "the job ran past its timeout and was killed")
        for m in members:
            if m.watch.log_error or m.watch.log_cut:
                return (Verdict.infrastructure_error, m.watch.log_error or m.watch.log_cut)
            if m.watch.log_over:
                return (Verdict.output_limit, f"the job printed more than {limits.log_bytes} bytes and was killed")
            if m.output_dir is not None:
                budget = m.step.output_budget or limits.output_bytes
                usage = dir_usage(m.output_dir, limits.output_files * 2, limits.output_depth)
                if usage.bytes > budget or usage.entries > limits.output_files * 2 or usage.too_deep:
                    return (
                        Verdict.output_limit,
                        f"the output directory passed its budget ({budget} bytes, "
                        f"{limits.output_files} files, {limits.output_depth} folders deep) and the job was killed",
                    )
        return None


def _job_of(container: Any) -> str:
    """The job a container runs: its label, or for a standby that took a job, its name."""
    name = getattr(container, "name", "") or ""
    return container.labels.get(LABEL_JOB) or (name[len("kcoral-") :] if name.startswith("kcoral-") else "")


def _starting(container: Any, making: set[str]) -> bool:
    """Whether ``container`` is a standby of a lease whose standby is being started now."""
    labels = container.labels
    return bool(labels.get(LABEL_STANDBY)) and labels.get(LABEL_SLOT) in making


def _kill(container: Any) -> None:
    try:
        container.kill()
    except DOCKER_ERRORS as exc:  # already gone is fine
        log.info("kill %s: %s", container.id[:12], exc)


def _write_cgroup_file(path: Path, leaf: str) -> None:
    """A created container's cgroup folder name, for a trusted container beside it (plan.ContainerStep)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(leaf)
    os.chmod(tmp, 0o444)
    os.replace(tmp, path)
