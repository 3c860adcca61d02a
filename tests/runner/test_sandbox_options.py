"""runner.sandbox.container_options, pure: the hardened profile's options for one step of a job."""

from __future__ import annotations

from pathlib import Path

from kcoral.runner.leases import Lease, Slot
from kcoral.runner.plan import ContainerStep
from kcoral.runner.sandbox import container_options
from kcoral.runner.settings import Settings

LEASE = Lease((Slot("cpu0", None, (0,)), Slot("cpu1", None, (1,))))


def options(step: ContainerStep, lease: Lease = LEASE) -> dict[str, object]:
    settings = Settings(data_dir=Path("/nonexistent"), image="img", gpus="none")
    return container_options(settings, "job", "img", step, lease, "devices")


def test_a_step_runs_on_the_lease_unless_it_names_its_own_cores() -> None:
    assert options(ContainerStep(command=["c"], env={}))["cpuset_cpus"] == "0,1"
    assert options(ContainerStep(command=["c"], env={}, cpus=(1,)))["cpuset_cpus"] == "1"
    assert "cpuset_cpus" not in options(ContainerStep(command=["c"], env={}), Lease((Slot("cpu0"),)))


def test_every_container_has_private_namespaces_and_a_hidden_cgroup_where_asked() -> None:
    plain = options(ContainerStep(command=["c"], env={}))
    assert plain["ipc_mode"] == "private" and "pid_mode" not in plain
    assert set(plain["tmpfs"]) == {"/tmp"}  # type: ignore[arg-type]
    hidden = options(ContainerStep(command=["c"], env={}, hide_cgroups=True))
    assert hidden["tmpfs"]["/sys/fs/cgroup"].startswith("ro,")  # type: ignore[index]
