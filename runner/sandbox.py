"""The hardened container profile: a pure function from (settings, job, lease) to docker-py
``containers.create`` keyword arguments. Nothing here talks to Docker.

Profile (../shared/notes/threat-model.md): uid 65534, every capability dropped,
no-new-privileges, Docker's default seccomp, read-only root filesystem, size-capped tmpfs for
/tmp (HOME lives there), no network, private IPC, pids/memory/nofile limits with swap equal to
memory, OOM-kill this container first, no core dumps, an init process, capped logs; an evaluation's
containers under the job cgroup of the largest CPU weight (runner.jobcgroup). The sent
directory is mounted read-only as the working directory; /job/out is the only writable mount.
"""

from __future__ import annotations

import os

from docker.types import DeviceRequest, LogConfig, Ulimit

from kcoral.protocol.jobenv import OUTPUT_MOUNT
from kcoral.runner.leases import Lease
from kcoral.runner.plan import ContainerStep
from kcoral.runner.settings import PYCACHE_MOUNT, Settings

LABEL_JOB = "kcoral.job"
LABEL_INSTANCE = "kcoral.instance"
LABEL_STEP = "kcoral.step"
NVIDIA_CONTROL_NODES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools")


def container_options(
    settings: Settings,
    job_id: str,
    image: str,
    step: ContainerStep,
    lease: Lease,
    gpu_mode: str,
    cgroup_parent: str = "",
) -> dict[str, object]:
    """Keyword arguments for ``client.containers.create`` for one step of a job (a timed step's under
    ``cgroup_parent``: runner.jobcgroup; "" for the engine's default)."""
    limits = settings.limits
    volumes = step_volumes(settings, step, bool(lease.gpus) and gpu_mode == "devices")
    tmpfs = {"/tmp": f"size={limits.tmpfs_bytes},mode=1777,exec,nosuid,nodev"}
    if step.hide_cgroups:
        tmpfs["/sys/fs/cgroup"] = "ro,size=4k,mode=0555"
    options: dict[str, object] = dict(
        image=image,
        command=step.command,
        environment=step.env,
        working_dir=step.working_dir,
        user=f"{step.uid}:{step.uid}",
        labels={LABEL_JOB: job_id, LABEL_INSTANCE: settings.instance, LABEL_STEP: step.name},
        hostname="kcoral-job",
        detach=True,
        init=True,
        read_only=True,
        cap_drop=["ALL"],
        security_opt=["no-new-privileges"],
        network_mode="none",
        ipc_mode="private",
        pids_limit=limits.pids,
        mem_limit=limits.memory_bytes,
        memswap_limit=limits.memory_bytes,
        oom_score_adj=1000,
        shm_size=limits.shm_bytes,
        tmpfs=tmpfs,
        ulimits=[Ulimit(name="core", soft=0, hard=0), Ulimit(name="nofile", soft=limits.nofile, hard=limits.nofile)],
        # Twice the cap, so the engine never rotates its log before the server's own cap stops the job:
        # a rotation at the cap can leave the live log stream behind, and the flood would run to its deadline.
        log_config=LogConfig(type="local", config={"max-size": str(2 * limits.log_bytes), "max-file": "2"}),
        volumes=volumes,
        stop_signal="SIGKILL",
    )
    if limits.cpus > 0:
        options["nano_cpus"] = int(limits.cpus * 1e9)
    if step.cpus is not None:
        options["cpuset_cpus"] = ",".join(str(c) for c in sorted(step.cpus))
    elif lease.cpuset:
        options["cpuset_cpus"] = lease.cpuset
    if cgroup_parent and step.timed:
        options["cgroup_parent"] = cgroup_parent
    options.update(gpu_options(lease, gpu_mode))
    return options


def step_volumes(settings: Settings, step: ContainerStep, driver: bool) -> dict[str, dict[str, str]]:
    """What a step's container mounts: the step's own folders, its output folder, the host toolchain's
    and the job bytecode's folders read-only, and the driver's files where GPUs are passed as devices
    (``driver``)."""
    volumes = {host: {"bind": inside, "mode": mode} for host, (inside, mode) in step.mounts.items()}
    if step.output_dir is not None:
        volumes[str(step.output_dir)] = {"bind": OUTPUT_MOUNT, "mode": "rw"}
    for path in settings.toolchain_mounts:
        volumes[path] = {"bind": path, "mode": "ro"}
    if settings.pycache_dir is not None:
        volumes[str(settings.pycache_dir.resolve())] = {"bind": PYCACHE_MOUNT, "mode": "ro"}
    if driver:
        for path in settings.driver_mounts:
            volumes[path] = {"bind": path, "mode": "ro"}
    return volumes


def gpu_options(lease: Lease, gpu_mode: str) -> dict[str, object]:
    """Hand exactly the leased GPUs to the container, by UUID where the runtime supports it."""
    gpus = lease.gpus
    if not gpus:
        return {}
    if gpu_mode == "runtime":
        return {"device_requests": [DeviceRequest(device_ids=[g.uuid for g in gpus], capabilities=[["gpu"]])]}
    devices = [f"/dev/nvidia{g.minor if g.minor >= 0 else g.index}" for g in gpus]
    devices += [node for node in NVIDIA_CONTROL_NODES if os.path.exists(node)]
    return {"devices": [f"{d}:{d}:rw" for d in devices]}
