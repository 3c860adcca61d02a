"""Server settings: one value object, built once by ``kcoral serve`` and passed in (never a global)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from kcoral.runner.limits import ConnectionLimits, Limits

#: Host directories mounted read-only into the toolchain image on GPU hosts whose CUDA and
#: PyTorch live on the host rather than in an image (see ../shared/gpu-host/README.md).
#: Not /sbin: Docker puts its init there (--init), and a mount over /sbin would hide it.
DEFAULT_TOOLCHAIN_MOUNTS = ("/usr", "/lib", "/lib64", "/bin", "/opt", "/etc")

#: where a toolchain job finds the server's bytecode of the host's Python (runner.pycache)
PYCACHE_MOUNT = "/kcoral-pycache"
#: the file in the server's bytecode folder that says a whole import path was compiled into it
PYCACHE_COMPLETE = "complete"
#: the uid jobs and candidates run as; the evaluation's supervisor runs as SUPERVISOR_UID, so neither
#: can signal, ptrace or read the other's files
JOB_UID = 65534
SUPERVISOR_UID = 65533


@dataclass(frozen=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 8901
    data_dir: Path = Path("kcoral-data")
    #: "auto" (every GPU NVML sees), "none", or explicit NVML indices
    gpus: str | tuple[int, ...] = "auto"
    #: concurrent jobs without a GPU (the only slots on a host without GPUs)
    cpu_slots: int = 2
    #: an evaluation's containers' parent cgroup, of the largest CPU weight (runner.jobcgroup); "" = the engine's
    job_cgroup: str = "kcoral"
    tokens_file: Path | None = None
    #: the job image; in toolchain mode a near-empty image that host directories are mounted into
    image: str = "kcoral-job:cpu"
    #: host directories mounted read-only into every job (toolchain mode); empty = image mode
    toolchain_mounts: tuple[str, ...] = ()
    #: the images ncu and iket jobs run in, in image mode (in toolchain mode they run in ``image``)
    ncu_image: str = "kcoral-ncu:latest"
    iket_image: str = "kcoral-iket:latest"
    #: how GPUs reach containers: "auto", "runtime" (NVIDIA runtime, --gpus) or "devices"
    gpu_mode: str = "auto"
    #: driver user-space libraries mounted read-only in "devices" mode (image mode only)
    driver_mounts: tuple[str, ...] = ()
    #: the interpreter run inside the job container
    python: str = "python3"
    #: keep a container started ahead of time per slot for the next job that fits (runner.standby)
    standby: bool = True
    #: operator-chosen additions to every job's environment (may set what clients cannot)
    job_env: dict[str, str] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)
    #: client connections: how many, and how long a request's head may take (runner.connections)
    connections: ConnectionLimits = field(default_factory=ConnectionLimits)
    #: the protected tasks directories (kcoral's task definitions, problem packs: tasks.registry); none =
    #: the repository's tasks/
    tasks_dirs: tuple[Path, ...] = ()
    #: on SIGTERM, seconds running jobs get to finish before they are interrupted
    shutdown_grace_s: float = 30.0
    #: tasks whose template the server evaluates of its own at its start (runner.warmup)
    warm_up: tuple[str, ...] = ()
    #: A/A requests (tasks.calibration) queued after each warm-up, beyond the warm-up itself
    calibrate: int = 0
    #: /metrics without a token (with a tokens file it wants one otherwise)
    metrics_public: bool = False
    #: each task's board shows a token the other tokens' best evaluations too, anonymised (runner.evaluations)
    public_board: bool = False
    #: a Ray cluster's address: jobs run on its hosts' agents (runner.cluster.placement), not on this server
    ray_address: str = ""

    @property
    def pycache_dir(self) -> Path | None:
        """Toolchain mode: the server's bytecode of the host Python's import path (runner.pycache)."""
        return self.data_dir / "pycache" if self.toolchain_mounts else None

    def operator_env(self) -> dict[str, str]:
        """What the server adds to every job's environment: the operator's --job-env and, in toolchain
        mode once the server has compiled it (runner.pycache), where the host Python's bytecode is.
        (Python then reads no __pycache__ folder: until a whole import path is compiled, jobs go on
        with the host's own.)"""
        env = dict(self.job_env)
        if self.pycache_dir is not None and (self.pycache_dir / PYCACHE_COMPLETE).is_file():
            env["PYTHONPYCACHEPREFIX"] = PYCACHE_MOUNT
        return env

    @property
    def instance(self) -> str:
        """Label value that marks this server's containers (one per data directory)."""
        return hashlib.sha256(str(self.data_dir.resolve()).encode()).hexdigest()[:16]

    def exposed_secrets(self, others: dict[str, Path] | None = None) -> list[str]:
        """What of the server's own a job could read through the toolchain mounts: the tokens file,
        the data dir (the holdout key, every job's files) and ``others`` (what -> path: a cluster
        host's Ray token) must lie outside all of them."""
        found = []
        mounts = [Path(m).resolve() for m in self.toolchain_mounts]
        secrets = {"the tokens file": self.tokens_file, "the data dir": self.data_dir, **(others or {})}
        for what, path in secrets.items():
            if path is None:
                continue
            real = path.resolve()
            for mount in mounts:
                if real == mount or mount in real.parents:
                    found.append(f"{what} {real} is inside {mount}, which every job gets read-only")
        return found

    @property
    def is_loopback(self) -> bool:
        return self.host in ("127.0.0.1", "::1", "localhost")
