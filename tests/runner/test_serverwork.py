"""runner.serverwork: the server's own container work (probes) takes a slot as a job does."""

from __future__ import annotations

from kcoral.runner.leases import LeasePool
from kcoral.runner.serverwork import slot_for_server_work


def test_a_probe_waits_for_a_slot_holds_it_and_wakes_the_scheduler_after() -> None:
    pool = LeasePool([], 1, cores=[0])
    job = pool.try_acquire(0)
    assert job is not None
    with slot_for_server_work(pool, wait_s=0.2) as lease:
        assert lease is None  # the job's slot: none within the wait
    pool.release(job)
    woken: list[bool] = []
    with slot_for_server_work(pool, lambda: woken.append(True)) as lease:
        assert lease is not None and lease.cpuset == "0"  # its container runs on the slot's core only
        assert pool.try_acquire(0) is None and not woken  # a job waits meanwhile
    assert woken == [True] and pool.try_acquire(0) is not None


def test_without_a_local_pool_the_work_runs_unleased() -> None:
    with slot_for_server_work(None) as lease:
        assert lease is not None and lease.slots == ()
