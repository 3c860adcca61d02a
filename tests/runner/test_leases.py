"""Slots (runner.leases): disjoint CPU shares, so an evaluation never shares a core; GPU types."""

from __future__ import annotations

import pytest

from kcoral.protocol.errors import BadRequest
from kcoral.protocol.models import GpuInfo
from kcoral.runner.leases import LeasePool, gpu_type, split_cores


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


def test_an_evaluation_takes_cpu_slots_enough_for_two_cores() -> None:
    """Issue 29: the candidate is kept off the judge's cores (tasks.harness.cores), so an evaluation needs
    two cores: on a host whose CPU slots have one each it takes two slots; where a slot has two, one."""
    one_each = LeasePool([], cpu_slots=2, cores=[0, 1])
    evaluation = one_each.try_acquire(0, cores=2)
    assert evaluation is not None and evaluation.cores == (0, 1)
    assert one_each.try_acquire(0) is None  # both slots are the evaluation's
    assert one_each.blocked(0, cores=2) == ""  # it only waits its turn
    one_each.release(evaluation)
    job = one_each.try_acquire(0)
    assert job is not None and len(job.cores) == 1
    assert one_each.try_acquire(0, cores=2) is None  # waits for the other slot
    two_each = LeasePool([], cpu_slots=2, cores=[0, 1, 2, 3])
    first, second = two_each.try_acquire(0, cores=2), two_each.try_acquire(0, cores=2)
    assert first is not None and second is not None and first.cores == (0, 1) and second.cores == (2, 3)


def test_an_evaluation_on_a_host_too_small_to_split_still_gets_a_slot() -> None:
    """Slots not pinned, or a single one-core slot: the evaluation runs on what there is (and is not
    scored: tasks.evaluate); it is never left waiting for slots that do not exist."""
    unpinned = LeasePool([], cpu_slots=4, cores=[0, 1])
    lease = unpinned.try_acquire(0, cores=2)
    assert lease is not None and lease.cores == () and len(lease.slots) == 1
    single = LeasePool([], cpu_slots=1, cores=[0])
    lease = single.try_acquire(0, cores=2)
    assert lease is not None and lease.cores == (0,)


def test_a_gpu_evaluation_takes_its_gpu_slot_alone() -> None:
    pool = LeasePool([_gpu(0, "NVIDIA H200")], cpu_slots=2, cores=list(range(16)))
    lease = pool.try_acquire(1, cores=2)
    assert lease is not None and [s.name for s in lease.slots] == ["gpu0"] and len(lease.cores) == 5


def _gpu(index: int, name: str) -> GpuInfo:
    return GpuInfo(index=index, uuid=f"GPU-{index}", name=name, minor=index, memory_total_mib=1)


def test_gpu_types_come_from_nvml_names() -> None:
    assert gpu_type("NVIDIA H200") == "H200" and gpu_type("NVIDIA H100 80GB HBM3") == "H100"
    assert gpu_type("Tesla T4") == "Tesla"


def test_a_job_gets_gpus_of_its_type_or_is_refused() -> None:
    pool = LeasePool([_gpu(0, "NVIDIA H200"), _gpu(1, "NVIDIA H100 80GB HBM3")], cpu_slots=1, cores=[0])
    h100 = pool.try_acquire(1, "h100")
    assert h100 is not None and [g.index for g in h100.gpus] == [1]
    assert pool.try_acquire(1, "H100") is None  # the only one is taken: wait
    assert pool.try_acquire(2, "any") is None  # one GPU free, two wanted
    assert pool.try_acquire(0, "H100") is not None  # no GPU wanted: a CPU slot, whatever the type
    with pytest.raises(BadRequest, match="H200, H100|H100, H200"):
        pool.check(1, "A100")
    pool.check(2, "any")
    with pytest.raises(BadRequest):
        pool.check(2, "H200")  # one H200 here: never two


def test_cpu_slots_stand_in_for_the_type_they_are_labelled_with() -> None:
    typed = LeasePool([], cpu_slots=1, cpu_slot_type="fakeA", cores=[0])
    assert typed.try_acquire(1, "fakea") is not None
    with pytest.raises(BadRequest, match="fakeA"):
        typed.check(1, "fakeB")
    plain = LeasePool([], cpu_slots=1, cores=[0])
    plain.check(1, "any")
    with pytest.raises(BadRequest):
        plain.check(1, "H200")
    taken = plain.take(["cpu0"])
    assert taken is not None and plain.take(["cpu0"]) is None and plain.take(["cpu9"]) is None


def test_a_job_that_needs_a_drained_gpu_is_told_so_and_one_that_waits_its_turn_is_not() -> None:
    pool = LeasePool([_gpu(0, "NVIDIA H200"), _gpu(1, "NVIDIA H100 80GB HBM3")], cpu_slots=1, cores=[0])
    assert pool.blocked(1, "H200") == ""
    taken = pool.try_acquire(1, "H200")
    assert taken is not None and pool.blocked(1, "H200") == ""  # busy, not drained: its turn comes
    pool.drain("gpu0", "processes [4242] still hold 1024 MiB")
    assert pool.blocked(1, "H200") == "gpu0 drained (processes [4242] still hold 1024 MiB)"
    assert pool.blocked(1, "H100") == "" and pool.blocked(1, "any") == ""  # gpu1 is in service
    assert pool.blocked(2, "any").startswith("gpu0 drained")  # two wanted, one in service
    assert pool.blocked(0, "any") == ""  # a CPU slot


def test_a_cluster_says_which_hosts_cannot_take_a_job() -> None:
    from kcoral.runner.cluster.hostagent import Inventory
    from kcoral.runner.cluster.placement import ClusterPlacement, Host
    from kcoral.runner.leases import Slot

    placement = ClusterPlacement(ray=None)
    assert placement.blocked(1, "H200") == "no host of the cluster is registered"

    def host(name: str, drained: dict[str, str], draining: bool = False) -> Host:
        slots = [Slot("gpu0", _gpu(0, "NVIDIA H200"), (), "H200")]
        return Host(None, Inventory(name, "", slots, {}, drained, {}, draining, []))

    placement._hosts = {"a": host("a", {"gpu0": "a fault"}), "b": host("b", {}, draining=True)}
    assert placement.blocked(1, "H200") == "on host a: gpu0 drained (a fault); host b is draining"
    placement._hosts["c"] = host("c", {})
    assert placement.blocked(1, "H200") == ""


def test_a_host_without_gpus_refuses_a_job_asking_for_more_than_one() -> None:
    """One GPU asked of a CPU-only server runs on a CPU slot (`kcoral python` asks for one unless told
    otherwise); more is refused with the reason, never run on the CPU (10**30 GPUs once did)."""
    plain = LeasePool([], cpu_slots=2, cores=[0, 1])
    plain.check(0, "any")
    plain.check(1, "any")
    for many in (2, 10**30):
        with pytest.raises(BadRequest, match=f"asks for {many} GPUs; this server has none"):
            plain.check(many, "any")


def test_a_cluster_refuses_more_gpus_than_any_host_has() -> None:
    """The cluster front end checks as one server does: 10**30 GPUs on CPU-only hosts are refused at submit."""
    from kcoral.runner.cluster.hostagent import Inventory
    from kcoral.runner.cluster.placement import ClusterPlacement, Host
    from kcoral.runner.leases import Slot

    def host(name: str, slots: list[Slot]) -> Host:
        return Host(None, Inventory(name, "", slots, {}, {}, {}, False, []))

    placement = ClusterPlacement(ray=None)
    placement._hosts = {"cpu": host("cpu", [Slot("cpu0", None, (0,), ""), Slot("cpu1", None, (1,), "")])}
    placement.check(1, "any")  # one asked of a CPU-only host runs on a CPU slot
    for many in (2, 10**30):
        with pytest.raises(BadRequest, match=f"asks for {many} GPU"):
            placement.check(many, "any")
    placement._hosts["gpu"] = host("gpu", [Slot(f"gpu{i}", _gpu(i, "NVIDIA H200"), (), "H200") for i in range(2)])
    placement.check(2, "any")
    with pytest.raises(BadRequest, match="asks for 3 GPU"):
        placement.check(3, "any")
