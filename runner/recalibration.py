"""The server keeps its noise floors spanning its time (tasks.calibration): while it has nothing to run,
it makes one more A/A request of a task calibrated here once that task's latest is
``calibration_every_s`` old.

A floor measured in one burst of requests sees one window of the host's time: on the 2-core dev VM ten
requests in a row spread 1.1% where the slot's requests spread ~4% over the next hour, and a floor on
them let a false gain through under load (bench/results/issue29-h100-2026-12-07-stop62). A floor rests
on the latest ``calibration_keep`` requests, so on a server that is idle now and then those come to be
spaced over hours. Only tasks with an A/A request of their current content and timing method on this
server are made again (the operator's warm-ups, ``kcoral calibrate``), until the requests a floor rests
on lie in ``calibration_keep`` windows of time (:func:`due`); one request at a time, and only after
QUIET_S with nothing queued or running, so a client's job waits at most one A/A request for it.
The request runs on whatever slot is free, as ``kcoral calibrate``'s do.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from kcoral.protocol.errors import KcoralError
from kcoral.protocol.models import JobState
from kcoral.runner.calibrations import request_times
from kcoral.runner.warmup import queue_template
from kcoral.tasks.calibration import CalibrationPolicy

if TYPE_CHECKING:
    from kcoral.runner.services import Services

log = logging.getLogger("kcoral.recalibration")

#: the owner of the server's own spaced A/A requests (runner.auth refuses token names that start with "kcoral:")
RECALIBRATION_OWNER = "kcoral:calibration"
#: seconds between looks at the queue
CHECK_S = 10.0
#: seconds with nothing queued or running (nor made here) before a request is made
QUIET_S = 60.0


def windows(times: Sequence[float], every_s: float) -> int:
    """How many windows of time ``times`` (epoch s) fall in: runs of requests each less than ``every_s``
    after the one before."""
    ordered = sorted(times)
    return sum(1 for i, t in enumerate(ordered) if i == 0 or t - ordered[i - 1] >= every_s)


def due(requests: Mapping[str, Sequence[float]], now: float, policy: CalibrationPolicy) -> str | None:
    """Of the tasks whose A/A requests were made at ``requests`` (epoch s, each task's own), the one to
    measure again: its latest request at least ``every_s`` old, and the requests its floor rests on (no
    older than ``max_age_s``, the latest ``keep``) in fewer than ``keep`` windows of time; of several, the
    one whose latest is oldest. None: none is, or ``every_s`` is 0 (never). A floor whose requests are all
    spaced apart asks for no more until one of them ages out, so an idle server makes at most ``keep``
    such requests of a task each ``max_age_s``."""
    every_s = policy.every_s
    if every_s <= 0:
        return None
    waiting = []
    for task, times in requests.items():
        latest = max(times, default=-math.inf)
        usable = sorted((t for t in times if now - t <= policy.max_age_s), reverse=True)[: policy.keep]
        if now - latest >= every_s and windows(usable, every_s) < policy.keep:
            waiting.append((latest, task))
    return min(waiting)[1] if waiting else None


class Recalibrator:
    """Looks at the queue every CHECK_S in a thread of its own and makes the request that is due
    (:meth:`tick`)."""

    def __init__(self, svc: Services, quiet_s: float = QUIET_S, clock: Callable[[], float] = time.time) -> None:
        self.svc = svc
        self.quiet_s = quiet_s
        self.clock = clock
        #: when the server last had something to run (its start counts: no request at once)
        self.busy_at = clock()
        #: when this server last made each task's request: one that stored nothing (it failed, or was
        #: interrupted) is not made again before ``every_s``, however old the task's stored ones are
        self.made: dict[str, float] = {}
        self._stop = threading.Event()

    def start(self) -> None:
        """Look in a daemon thread until :meth:`stop` (not at all where ``calibration_every_s`` is 0)."""
        if self.svc.settings.limits.calibration.every_s > 0:
            threading.Thread(target=self._loop, name="kcoral-recalibration", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()

    def _loop(self) -> None:
        while not self._stop.wait(CHECK_S):
            try:
                self.tick()
            except Exception:  # the store briefly unreadable, say: the next look tries again
                log.exception("the spaced A/A request could not be made; trying again")

    def tick(self) -> str | None:
        """Queue the task's A/A request that is due, once the server has had nothing to run for
        ``quiet_s``; its job id, or None."""
        now = self.clock()
        policy = self.svc.settings.limits.calibration
        store = self.svc.store
        if policy.every_s <= 0 or not self.svc.scheduler.accepting:
            return None
        if store.in_state(JobState.queued) or store.in_state(JobState.running):
            self.busy_at = now
            return None
        if now - self.busy_at < self.quiet_s:
            return None
        requests = {
            task: times
            for task, times in request_times(self.svc).items()
            if now - self.made.get(task, -math.inf) >= policy.every_s
        }
        task = due(requests, now, policy)
        if task is None:
            return None
        self.busy_at = self.made[task] = now  # made or refused: nothing before another quiet spell
        try:
            job = queue_template(self.svc, self.svc.settings.tasks_dirs, task, RECALIBRATION_OWNER)
        except KcoralError as exc:  # a full disk, say: the server runs on
            log.warning("no spaced A/A request of %s: %s", task, exc.message)
            return None
        log.info("spaced A/A request %s of %s: its latest was %.0f s ago", job, task, now - max(requests[task]))
        return job
