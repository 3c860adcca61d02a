"""CPU cores per slot (runner.leases): disjoint shares, so an evaluation never shares a core."""

from __future__ import annotations

from kcoral.runner.leases import LeasePool, split_cores
from kcoral.runner.models import GpuInfo


def test_split_cores_gives_disjoint_equal_shares() -> None:
    assert split_cores(list(range(16)), 3) == [(0, 1, 2, 3, 4), (5, 6, 7, 8, 9), (10, 11, 12, 13, 14)]
    assert split_cores([0, 1], 2) == [(0,), (1,)]
    assert split_cores([0], 2) == [(), ()]  # too few cores: not pinned


def test_pool_pins_each_slot() -> None:
    gpu = GpuInfo(index=0, uuid="GPU-x", name="H200", minor=0, memory_total_mib=1)
    pool = LeasePool([gpu], cpu_slots=2, cores=list(range(9)))
    a, b, c = pool.try_acquire(1), pool.try_acquire(0), pool.try_acquire(0)
    assert a and b and c
    sets = [set(map(int, lease.cpuset.split(","))) for lease in (a, b, c)]
    assert sets[0] == {0, 1, 2} and not (sets[0] & sets[1]) and not (sets[1] & sets[2])
    assert pool.describe()["cpus"]["gpu0"] == "0,1,2"


def test_pool_without_enough_cores_is_not_pinned() -> None:
    pool = LeasePool([], cpu_slots=4, cores=[0, 1])
    lease = pool.try_acquire(0)
    assert lease and lease.cpuset == ""
    assert pool.describe()["cpus"]["cpu0"] == "not pinned"
