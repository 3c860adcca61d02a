"""The server's collaborators, built once from Settings and handed to the routes."""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from kcoral.protocol.errors import Conflict
from kcoral.protocol.models import GpuInfo
from kcoral.runner.auth import Authenticator, load_operators, load_tokens
from kcoral.runner.executor import DockerExecutor
from kcoral.runner.gpus import Nvml, select_gpus
from kcoral.runner.imageprobe import ImageProbe
from kcoral.runner.jobkinds import HostFacts
from kcoral.runner.jobrunner import JobRunner, LocalRunner
from kcoral.runner.leases import LeasePool, Placement
from kcoral.runner.packprobe import PackProbe
from kcoral.runner.pycache import ToolchainBytecode
from kcoral.runner.receipt_keys import KeyRing, keys_dir
from kcoral.runner.scheduler import Scheduler
from kcoral.runner.serverwork import slot_for_server_work
from kcoral.runner.settings import Settings
from kcoral.runner.store import JobStore
from kcoral.runner.warmup import WarmUp


class Uploads:
    """The jobs whose input is being received: one upload per job at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: set[str] = set()

    @contextmanager
    def claim(self, job_id: str) -> Iterator[None]:
        with self._lock:
            if job_id in self._jobs:
                raise Conflict(f"job {job_id} is receiving its input already")
            self._jobs.add(job_id)
        try:
            yield
        finally:
            with self._lock:
                self._jobs.discard(job_id)


@dataclass
class Services:
    settings: Settings
    store: JobStore
    nvml: Nvml
    gpus: list[GpuInfo]
    placement: Placement
    executor: DockerExecutor
    scheduler: Scheduler
    auth: Authenticator
    #: the keys that sign evaluations' receipts (runner.receipt_keys): GET /v1/keys lists their public halves
    keys: KeyRing
    uploads: Uploads = field(default_factory=Uploads)
    image_probe: ImageProbe = field(init=False)
    #: what the packs' problems build, asked of the job image (runner.packprobe)
    pack_probe: PackProbe = field(init=False)
    #: toolchain mode: the host Python's bytecode, compiled at the start for every job (runner.pycache)
    bytecode: ToolchainBytecode = field(init=False)
    #: the evaluations the server queued of its own at its start (runner.warmup)
    warm_ups: list[WarmUp] = field(default_factory=list)

    def __post_init__(self) -> None:
        slots = functools.partial(slot_for_server_work, self.placement, self.scheduler.wake)
        self.image_probe = ImageProbe(self.executor, self.settings.python, self.settings.data_dir / "probes", slots)
        self.pack_probe = PackProbe(
            self.executor, self.settings.image, self.settings.python, self.settings.data_dir, slots
        )
        self.bytecode = ToolchainBytecode(self.settings)

    def facts(self) -> HostFacts:
        """What a job kind may read of this server when it checks a spec (runner.jobkinds.HostFacts)."""
        return HostFacts(self.settings, tuple(self.gpus), self.executor.has_image)

    @classmethod
    def build(cls, settings: Settings) -> Services:
        store = JobStore(settings.data_dir)
        nvml = Nvml()
        executor = DockerExecutor(settings, log_grew=store.changes.changed)
        keys = KeyRing.open(keys_dir(settings.data_dir))
        placement: Placement
        runner: JobRunner
        if settings.ray_address:  # the cluster's hosts run the jobs (runner.cluster): none here
            from kcoral.runner.cluster.placement import ClusterPlacement, connect
            from kcoral.runner.cluster.remotejobs import RemoteJobs
            from kcoral.runner.cluster.runner import RayRunner

            gpus: list[GpuInfo] = []
            placement = ClusterPlacement(connect(settings.ray_address), settings.instance)
            runner = RayRunner(store, RemoteJobs(placement, log_grew=store.changes.changed))
        else:
            gpus = select_gpus(nvml.list(), settings.gpus)
            placement = LeasePool(gpus, settings.cpu_slots)
            runner = LocalRunner(store, placement, executor, nvml, settings)
        scheduler = Scheduler(store, placement, runner, settings, keys)
        tokens = load_tokens(settings.tokens_file) if settings.tokens_file else None
        operators = load_operators(settings.tokens_file) if settings.tokens_file else frozenset()
        auth = Authenticator(tokens, operators)
        return cls(settings, store, nvml, gpus, placement, executor, scheduler, auth, keys)
