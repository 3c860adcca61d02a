"""A slot for the server's own container work (the probes of packs and images), taken as a job takes one:
an evaluation is never timed on cores that a probe's container is using (it was: the probe ran on every
core, unleased, and an evaluation that started beside the packs' inspection at a server's start saw 70%
of its candidate's calls shared with it, and was rightly left unscored).

A CPU slot where the host has one, else a GPU slot (its GPU unused); the placement of a cluster front end
has no slot of this host, and there the work runs without one, as before.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

from kcoral.runner.leases import Lease, LeasePool, Placement

#: where a probe gets its slot: ``with slots(wait_s) as lease`` (:func:`slot_for_server_work`, or
#: :func:`no_slot`); None: no slot came within ``wait_s``
SlotSource = Callable[[float | None], AbstractContextManager[Lease | None]]

#: how often a probe waiting for a slot asks again
POLL_S = 0.05


@contextlib.contextmanager
def slot_for_server_work(
    placement: Placement | None, wake: Callable[[], None] | None = None, wait_s: float | None = None
) -> Iterator[Lease | None]:
    """A lease on one slot of this host, held for the block: it waits while every slot is busy (a probe
    comes after the evaluations running), at most ``wait_s`` (None: as long as it takes), then gives None;
    released after the block, and the scheduler woken for the jobs waiting."""
    if not isinstance(placement, LeasePool):
        yield Lease(slots=())
        return
    gpus = 0 if any(s.gpu is None for s in placement.slots()) else 1
    until = None if wait_s is None else time.monotonic() + wait_s
    lease = placement.try_acquire(gpus)
    while lease is None and (until is None or time.monotonic() < until):
        time.sleep(POLL_S)
        lease = placement.try_acquire(gpus)
    if lease is None:
        yield None
        return
    try:
        yield lease
    finally:
        placement.release(lease)
        if wake is not None:
            wake()


def no_slot(wait_s: float | None = None) -> AbstractContextManager[Lease | None]:
    """No slot: the probe's container runs on the host's cores unpinned (a probe made without a placement)."""
    return slot_for_server_work(None, wait_s=wait_s)
