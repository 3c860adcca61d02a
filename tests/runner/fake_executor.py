"""An in-memory runner.plan.Executor for tests of the scheduler, the plan runner and the kinds'
plans: it records the steps it is given and plays each group by a script. No engine."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kcoral.protocol.errors import InfrastructureError
from kcoral.protocol.models import ImageInfo, Verdict
from kcoral.runner.leases import Lease
from kcoral.runner.plan import ContainerStep, StepOutcome

#: plays one group: (job id, steps, cancel, deadline) -> one outcome per step
Script = Callable[[str, list[ContainerStep], threading.Event, float], list[StepOutcome]]


def exits(*codes: int) -> Script:
    """Each step exits by itself with its code (the last code for the steps after)."""

    def play(job_id: str, steps: list[ContainerStep], cancel: threading.Event, deadline: float) -> list[StepOutcome]:
        return [StepOutcome(None, codes[min(i, len(codes) - 1)], False, 0) for i in range(len(steps))]

    return play


def runs_until_stopped(started: threading.Event | None = None) -> Script:
    """The group runs until it is cancelled or its deadline passes, then is killed for that."""

    def play(job_id: str, steps: list[ContainerStep], cancel: threading.Event, deadline: float) -> list[StepOutcome]:
        if started is not None:
            started.set()
        while not cancel.wait(0.01):
            if time.monotonic() >= deadline:
                killed = (Verdict.timeout, "the job ran past its timeout and was killed")
                return [StepOutcome(killed, 137, False, 0) for _ in steps]
        return [StepOutcome((Verdict.cancelled, "cancelled by request"), 137, False, 0) for _ in steps]

    return play


@dataclass
class Ran:
    job_id: str
    image: str
    steps: list[ContainerStep]
    lease: Lease
    deadline: float = 0.0


@dataclass
class FakeExecutor:
    script: Script = field(default_factory=lambda: exits(0))
    images: set[str] | None = None  # None: every image is present
    failing: str = ""  # run_group raises InfrastructureError with this message
    ran: list[Ran] = field(default_factory=list)
    orphans: int = 0
    down: bool = False  # the engine does not answer: the scheduler holds the queue
    tidied: list[set[str]] = field(default_factory=list)
    asked: int = 0  # times the scheduler asked whether the engine answers
    prewarmed: list[str] = field(default_factory=list)  # the leases asked to keep a standby
    closed: bool = False
    #: notified at each tidy (once per turn of the scheduler's loop): a test waits on it, never sleeps
    turn: threading.Condition = field(default_factory=threading.Condition)

    def image_info(self, ref: str) -> ImageInfo:
        if self.images is not None and ref not in self.images:
            raise InfrastructureError(f"job image {ref} is not present: run `kcoral images build`")
        return ImageInfo(ref=ref, digest="sha256:" + hashlib.sha256(ref.encode()).hexdigest())

    def has_image(self, ref: str) -> bool:
        return self.images is None or ref in self.images

    def cgroup_mount(self) -> tuple[str, str] | None:
        return None

    def engine(self) -> dict[str, Any]:
        return {"ok": True, "version": "fake"}

    def remove_orphans(self, keep: Collection[str] = ()) -> int:
        found, self.orphans = self.orphans, 0
        return found

    def reachable(self) -> bool:
        self.asked += 1
        return not self.down

    def tidy(self, running: set[str]) -> None:
        with self.turn:
            self.tidied.append(set(running))
            self.turn.notify_all()

    def close(self) -> None:
        self.closed = True

    def remove_exited(self, job_id: str) -> None:
        pass

    def prewarm(self, job_id: str, image: str, step: ContainerStep, lease: Lease) -> None:
        self.prewarmed.append(lease.name)

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
        self.ran.append(Ran(job_id, image, steps, lease, deadline))
        if self.failing:
            raise InfrastructureError(self.failing)
        for step in steps:
            if step.output_dir is not None:
                step.output_dir.mkdir(parents=True, exist_ok=True)
        return self.script(job_id, steps, cancel, deadline)


class NoGpus:
    """A GPU probe for a host without GPUs: nothing to list, nothing in use (no NVML loaded)."""

    def list(self) -> list[Any]:
        return []

    def usage(self, index: int) -> Any:
        raise AssertionError(f"no GPU {index} on this fake host")

    def telemetry(self, index: int) -> dict[str, float] | None:
        return None


def fake_services(settings: Any, executor: FakeExecutor | None = None) -> Any:
    """The server's Services as Services.build makes them, with a FakeExecutor for the Docker one and no
    GPUs: for tests of the app's routes and schema that must not need an engine (create_app(settings,
    fake_services(settings)))."""
    from kcoral.runner.auth import Authenticator, load_operators, load_tokens
    from kcoral.runner.leases import LeasePool
    from kcoral.runner.receipt_keys import KeyRing, keys_dir
    from kcoral.runner.scheduler import Scheduler
    from kcoral.runner.services import Services
    from kcoral.runner.store import JobStore

    store = JobStore(settings.data_dir)
    gpus, nvml, run = NoGpus(), NoGpus(), executor or FakeExecutor()
    placement = LeasePool([], settings.cpu_slots)
    keys = KeyRing.open(keys_dir(settings.data_dir))
    scheduler = Scheduler.local(store, placement, run, gpus, settings, keys)
    tokens = load_tokens(settings.tokens_file) if settings.tokens_file else None
    operators = load_operators(settings.tokens_file) if settings.tokens_file else frozenset()
    return Services(settings, store, nvml, [], placement, run, scheduler, Authenticator(tokens, operators), keys)  # type: ignore[arg-type]
