"""runner.sandbox.container_options, pure: the hardened profile's options for one step of a job."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from docker.types import DeviceRequest, LogConfig, Ulimit

from kcoral.protocol.jobenv import INPUT_MOUNT, OUTPUT_MOUNT
from kcoral.protocol.models import GpuInfo
from kcoral.runner import sandbox
from kcoral.runner.leases import Lease, Slot
from kcoral.runner.limits import Limits
from kcoral.runner.plan import ContainerStep
from kcoral.runner.sandbox import LABEL_INSTANCE, LABEL_JOB, LABEL_STEP, container_options, gpu_options
from kcoral.runner.settings import PYCACHE_MOUNT, Settings

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


def test_a_timed_step_goes_under_the_job_cgroup_where_there_is_one() -> None:
    timed, plain, settings = ContainerStep(["c"], {}, timed=True), ContainerStep(["c"], {}), _settings()
    assert container_options(settings, "j", "i", timed, LEASE, "devices", "/kcoral")["cgroup_parent"] == "/kcoral"
    assert "cgroup_parent" not in container_options(settings, "j", "i", timed, LEASE, "devices", "")
    assert "cgroup_parent" not in container_options(settings, "j", "i", plain, LEASE, "devices", "/kcoral")


def _settings(**kw: object) -> Settings:
    return Settings(data_dir=Path("/nonexistent"), image="img", gpus="none", **kw)  # type: ignore[arg-type]


def test_the_hardened_profile_whole() -> None:
    """Every option of the threat model's profile, for a plain step on a CPU lease."""
    limits = Limits(memory_bytes=3 << 30, pids=77, tmpfs_bytes=5 << 20, shm_bytes=6 << 20, nofile=99, log_bytes=1000)
    settings = replace(_settings(), limits=limits)
    step = ContainerStep(command=["python3", "m.py"], env={"A": "1"}, name="judge", uid=4242)
    got = container_options(settings, "job-1", "img@sha256:1", step, LEASE, "devices")
    assert got == {
        "image": "img@sha256:1",
        "command": ["python3", "m.py"],
        "environment": {"A": "1"},
        "working_dir": INPUT_MOUNT,
        "user": "4242:4242",
        "labels": {LABEL_JOB: "job-1", LABEL_INSTANCE: settings.instance, LABEL_STEP: "judge"},
        "hostname": "kcoral-job",
        "detach": True,
        "init": True,
        "read_only": True,
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "network_mode": "none",
        "ipc_mode": "private",
        "pids_limit": 77,
        "mem_limit": 3 << 30,
        "memswap_limit": 3 << 30,
        "oom_score_adj": 1000,
        "shm_size": 6 << 20,
        "tmpfs": {"/tmp": f"size={5 << 20},mode=1777,exec,nosuid,nodev"},
        "ulimits": [Ulimit(name="core", soft=0, hard=0), Ulimit(name="nofile", soft=99, hard=99)],
        "log_config": LogConfig(type="local", config={"max-size": "2000", "max-file": "2"}),
        "volumes": {},
        "stop_signal": "SIGKILL",
        "cpuset_cpus": "0,1",
    }
    assert "nano_cpus" not in got and "devices" not in got and "device_requests" not in got
    assert settings.instance == _settings().instance  # the label is the data dir's, not the limits'


def test_a_cpu_cap_is_set_in_nano_cpus() -> None:
    settings = replace(_settings(), limits=Limits(cpus=1.5))
    assert (
        container_options(settings, "j", "i", ContainerStep(command=["c"], env={}), LEASE, "devices")["nano_cpus"]
        == 1_500_000_000
    )


def test_mounts_the_step_asks_for_and_only_the_output_folder_writable(tmp_path: Path) -> None:
    step = ContainerStep(
        command=["c"], env={}, mounts={"/h/in": ("/job/input", "ro"), "/h/chan": ("/chan", "rw")}, output_dir=tmp_path
    )
    volumes = options(step)["volumes"]
    assert volumes == {
        "/h/in": {"bind": "/job/input", "mode": "ro"},
        "/h/chan": {"bind": "/chan", "mode": "rw"},
        str(tmp_path): {"bind": OUTPUT_MOUNT, "mode": "rw"},
    }


def test_toolchain_mode_mounts_the_host_python_and_its_bytecode_read_only(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, image="img", gpus="none", toolchain_mounts=("/usr/lib/py", "/opt/site"))
    volumes = container_options(settings, "j", "i", ContainerStep(command=["c"], env={}), LEASE, "devices")["volumes"]
    assert volumes == {
        "/usr/lib/py": {"bind": "/usr/lib/py", "mode": "ro"},
        "/opt/site": {"bind": "/opt/site", "mode": "ro"},
        str((tmp_path / "pycache").resolve()): {"bind": PYCACHE_MOUNT, "mode": "ro"},
    }


GPU = GpuInfo(index=3, minor=5, uuid="GPU-abc", name="H200", memory_total_mib=1)
GPU_LEASE = Lease((Slot("gpu3", GPU, (2,)),))


def test_gpus_by_device_node_with_the_driver_mounts_and_the_control_nodes_there_are(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sandbox.os.path, "exists", lambda p: p == "/dev/nvidiactl")
    settings = _settings(driver_mounts=("/usr/lib/libcuda.so.1",))
    got = container_options(settings, "j", "i", ContainerStep(command=["c"], env={}), GPU_LEASE, "devices")
    assert got["devices"] == ["/dev/nvidia5:/dev/nvidia5:rw", "/dev/nvidiactl:/dev/nvidiactl:rw"]
    assert got["volumes"] == {"/usr/lib/libcuda.so.1": {"bind": "/usr/lib/libcuda.so.1", "mode": "ro"}}
    assert got["cpuset_cpus"] == "2"
    # no minor known: the NVML index names the node
    unknown = Lease((Slot("gpu3", replace(GPU, minor=-1), (2,)),))
    assert gpu_options(unknown, "devices")["devices"][0] == "/dev/nvidia3:/dev/nvidia3:rw"  # type: ignore[index]
    # the driver mounts only where a GPU is handed over by device node
    cpu = container_options(settings, "j", "i", ContainerStep(command=["c"], env={}), LEASE, "devices")
    assert cpu["volumes"] == {}


def test_gpus_through_the_nvidia_runtime_by_uuid() -> None:
    settings = _settings(driver_mounts=("/usr/lib/libcuda.so.1",))
    got = container_options(settings, "j", "i", ContainerStep(command=["c"], env={}), GPU_LEASE, "runtime")
    assert got["device_requests"] == [DeviceRequest(device_ids=["GPU-abc"], capabilities=[["gpu"]])]
    assert "devices" not in got and got["volumes"] == {}
    assert gpu_options(LEASE, "runtime") == {} and gpu_options(LEASE, "devices") == {}


def test_the_labels_a_servers_containers_are_found_by() -> None:
    """Containers made by earlier versions are tidied by these labels: they cannot change."""
    assert (LABEL_JOB, LABEL_INSTANCE, LABEL_STEP) == ("kcoral.job", "kcoral.instance", "kcoral.step")


def test_a_fractional_cpu_cap_and_a_steps_own_cores_in_order() -> None:
    settings = replace(_settings(), limits=Limits(cpus=0.5))
    got = container_options(settings, "j", "i", ContainerStep(command=["c"], env={}, cpus=(2, 0)), LEASE, "devices")
    assert got["nano_cpus"] == 500_000_000 and got["cpuset_cpus"] == "0,2"


def test_every_control_node_there_is_and_gpu_minor_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox.os.path, "exists", lambda p: True)
    lease = Lease((Slot("gpu3", replace(GPU, minor=0), (2,)),))
    assert gpu_options(lease, "devices")["devices"] == [
        "/dev/nvidia0:/dev/nvidia0:rw",
        "/dev/nvidiactl:/dev/nvidiactl:rw",
        "/dev/nvidia-uvm:/dev/nvidia-uvm:rw",
        "/dev/nvidia-uvm-tools:/dev/nvidia-uvm-tools:rw",
    ]
