"""The standby take-over (runner.standby): the executor's standby containers, started ahead of a job
with every option the job's container would get, handed the job when it comes (its folders swapped
in, its command sent on the standby's stdin), its folders put back after it, and the next standby
started in the background. The executor asks; the engine calls go through what it gives here."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kcoral.protocol.errors import InfrastructureError
from kcoral.runner import standby
from kcoral.runner.containers import DOCKER_ERRORS, prepare_output_dir, remove
from kcoral.runner.enginelog import ContainerOutput
from kcoral.runner.leases import Lease
from kcoral.runner.sandbox import LABEL_INSTANCE, LABEL_STEP
from kcoral.runner.settings import Settings
from kcoral.runner.standby import Fit, Standby, StandbyPool
from kcoral.runner.store import jobs_dir

log = logging.getLogger("kcoral.executor")


class StandbyTakeover:
    """Standby containers per lease for the executor. ``create`` makes a container from docker-py
    options, ``attach`` opens a container's stdin (docker-py's attach socket), ``left_behind`` is told
    of a container the engine failed to remove (a later tidy removes it)."""

    def __init__(
        self,
        settings: Settings,
        create: Callable[[dict[str, object]], Any],
        attach: Callable[[str], Any],
        left_behind: Callable[[], None],
    ) -> None:
        self.settings = settings
        self._create = create
        self._attach = attach
        self._left_behind = left_behind
        self.pool = StandbyPool(settings.data_dir / "standby")
        self.pool.clear_folders()

    def in_use(self) -> tuple[set[str], set[str]]:
        """The standbys' container ids held ready, and the leases whose standby is being started."""
        return self.pool.in_use()

    def close(self) -> None:
        """Every standby removed (waiting for one being started)."""
        self.pool.close(self._discard)

    def fit(self, job_id: str, options: dict[str, object]) -> Fit | None:
        """How a job's container with ``options`` would run in a standby; None when it cannot."""
        return standby.fit(options, jobs_dir(self.settings.data_dir) / job_id, self.settings.python)

    def refill(self, lease: Lease, fits: Fit, options: dict[str, object]) -> None:
        """Start ``lease``'s next standby for containers like ``options`` in the background."""
        self.pool.refill(lease.name, fits.key, lambda folder: self._make(folder, options, fits, lease), self._discard)

    def take(
        self, job_id: str, lease: Lease, fits: Fit, options: dict[str, object]
    ) -> tuple[Standby, ContainerOutput] | None:
        """The lease's standby, now running this job, and its output (attached before the hand-over);
        None when there is none that fits (or the hand-over failed: the job's folders are back where
        they were, the standby is gone)."""
        ready = self.pool.take(lease.name, fits.key)
        if ready is None:
            return None
        output: ContainerOutput | None = None
        try:
            standby.swap_in(fits.folders, ready.folders)
            output = ContainerOutput(ready.container)  # before the hand-over: the job prints from then on
            # attached only now: an attach fails for a standby that is gone (removed behind our back),
            # where one held open since its start would take the job without a word
            socket = self._attach(ready.container.id)
            raw = getattr(socket, "_sock", socket)
            try:
                raw.sendall(standby.hand_over_message(options))
            finally:
                raw.close()  # the end of the attach stream: the engine closes the container's stdin
                socket.close()
        except (OSError, *DOCKER_ERRORS) as exc:
            if output is not None:
                output.close()
            log.warning("the standby for %s could not take job %s (%s): it starts its own", lease.name, job_id, exc)
            remove(ready.container)
            try:
                standby.undo_swap_in(fits.folders, ready.folders)
            except OSError as undo:
                raise InfrastructureError(f"the job's files could not be moved back from a standby: {undo}") from None
            finally:
                self.pool.handed_back(ready)
            self._discard(ready)
            return None
        return ready, output

    def give_back(self, fits: Fit, taken: Standby) -> None:
        """After the job's container is gone: its folders back in the job's place, the standby's gone."""
        try:
            standby.swap_back(fits.folders, taken.folders)
        except OSError as exc:
            log.error("the folders of job container %s could not be put back: %s", taken.container.id[:12], exc)
        shutil.rmtree(taken.root, ignore_errors=True)
        self.pool.handed_back(taken)

    def _make(self, folder: Path, options: dict[str, object], fits: Fit, lease: Lease) -> Standby:
        """A container with ``options`` but its own folders, waiting for a job on its stdin."""
        folder.mkdir(parents=True)
        own = []
        volumes = {k: v for k, v in dict(options["volumes"]).items() if Path(k) not in fits.folders}  # type: ignore[call-overload]
        for i, (target, mode) in enumerate(zip(fits.targets, fits.modes, strict=True)):
            mine = folder / f"m{i}"
            mine.mkdir()
            if mode == "rw":
                prepare_output_dir(mine, int(str(options["user"]).split(":")[0]))
            volumes[str(mine)] = {"bind": target, "mode": mode}
            own.append(mine)
        labels = {
            LABEL_INSTANCE: self.settings.instance,
            LABEL_STEP: "standby",
            standby.LABEL_STANDBY: fits.key,
            standby.LABEL_SLOT: lease.name,
        }
        made = dict(options)
        made.update(
            command=[self.settings.python, "-I", "-S", "-c", standby.LAUNCHER],
            environment={},
            labels=labels,
            volumes=volumes,
            stdin_open=True,
            detach=False,  # docker-py: with stdin_open, the container's stdin closes after the hand-over
        )
        container = self._create(made)
        try:
            container.start()
        except DOCKER_ERRORS:  # a start cut by the engine's loss: the container stays until a tidy
            if not remove(container):
                self._left_behind()
            raise
        return Standby(container, fits.key, folder, tuple(own))

    def _discard(self, waiting: Standby) -> None:
        if not remove(waiting.container):
            self._left_behind()
        shutil.rmtree(waiting.root, ignore_errors=True)
