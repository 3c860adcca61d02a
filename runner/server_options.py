"""The options of the commands that run jobs on a host (``kcoral serve``, ``kcoral agent``), each
defined once: its flag, its help, and the environment variable ``KCORAL_<NAME>`` that sets it when
the flag is not given (``kcoral serve --help`` lists them). A command's own default stays beside its
parameter; what both commands share is one alias here, and :func:`job_host` turns it into Settings.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer

from kcoral.protocol.models import MAX_CALIBRATION_REQUESTS
from kcoral.runner.jobcgroup import JOB_CGROUP_NAME, JOB_CGROUP_RULE
from kcoral.runner.limits import ConnectionLimits, Limits, from_environment, help_table, with_limits
from kcoral.runner.settings import DEFAULT_TOOLCHAIN_MOUNTS

#: the panels that `kcoral serve --help` (and `kcoral agent --help`) list the options under
LISTEN = "Listening and access"
JOBS = "Jobs and slots"
TOOLCHAIN = "GPU hosts without a registry"
PROFILERS = "Profilers"
EVALUATIONS = "Evaluations"
CLUSTER = "Several GPU hosts"
LOGGING = "Logging"


def _option(name: str, help: str, panel: str, **kwargs: Any) -> Any:
    """``--NAME``'s typer option, also set by ``KCORAL_NAME`` (upper case, '-' as '_'), listed under ``panel``."""
    envvar = "KCORAL_" + name.upper().replace("-", "_")
    return typer.Option(f"--{name}", envvar=envvar, help=help, rich_help_panel=panel, **kwargs)


def _flag(name: str, help: str, panel: str) -> Any:
    """``--NAME/--no-NAME``, also set by ``KCORAL_NAME``, listed under ``panel``."""
    envvar = "KCORAL_" + name.upper().replace("-", "_")
    return typer.Option(f"--{name}/--no-{name}", envvar=envvar, help=help, rich_help_panel=panel)


# --- a host's jobs: both commands ------------------------------------------------------------------
DataDir = Annotated[Path, _option("data-dir", "SQLite file and job folders live here", JOBS)]
Gpus = Annotated[str, _option("gpus", "auto | none | comma-separated NVML indices", JOBS)]
CpuSlots = Annotated[int, _option("cpu-slots", "concurrent jobs without a GPU", JOBS, min=0)]
Image = Annotated[
    str, _option("image", "job image (default kcoral-job:cpu; kcoral-toolchain:latest with --host-toolchain)", JOBS)
]
HostToolchain = Annotated[
    bool,
    _flag(
        "host-toolchain",
        "mount the host's /usr /lib /lib64 /bin /opt /etc read-only into a near-empty image (GPU hosts "
        "without a registry)",
        TOOLCHAIN,
    ),
]
JobCgroup = Annotated[
    str,
    _option(
        "job-cgroup",
        "an evaluation's containers' parent cgroup, given the largest CPU weight so that host processes yield the "
        "leased cores ('' for the engine's default parent)",
        JOBS,
    ),
]
GpuMode = Annotated[
    str, _option("gpu-mode", "auto | runtime (NVIDIA container runtime) | devices (device nodes)", JOBS)
]
Python = Annotated[str, _option("python", "interpreter inside the job container", JOBS)]
JobEnv = Annotated[list[str], _option("job-env", "NAME=VALUE added to every job's environment", JOBS)]
TasksDir = Annotated[
    list[Path],
    _option(
        "tasks-dir",
        "protected tasks directory: kcoral task folders, KernelBench problem files, GPU MODE problem folders; "
        "repeat for several (default: the repository's tasks/)",
        EVALUATIONS,
    ),
]
Standby = Annotated[
    bool,
    _flag("standby", "keep a container started ahead of time per slot, for the next python job (runner.standby)", JOBS),
]
LogLevel = Annotated[str, _option("log-level", "debug | info | warning", LOGGING)]

# --- kcoral serve ---------------------------------------------------------------------------------
Host = Annotated[str, _option("host", "address to listen on; non-loopback needs --tokens-file", LISTEN)]
Port = Annotated[int, _option("port", "TCP port", LISTEN)]
TokensFile = Annotated[Path | None, _option("tokens-file", "bearer tokens, one 'NAME TOKEN' per line", LISTEN)]
ToolchainMount = Annotated[
    list[str], _option("toolchain-mount", "with --host-toolchain: mount these instead of the defaults", TOOLCHAIN)
]
NcuImage = Annotated[
    str, _option("ncu-image", "image of ncu jobs (not with --host-toolchain: the host's ncu is used)", PROFILERS)
]
IketImage = Annotated[
    str, _option("iket-image", "image of iket jobs (not with --host-toolchain: the host's run-iket is used)", PROFILERS)
]
DriverMount = Annotated[
    list[str], _option("driver-mount", "in devices mode: driver library dirs to mount read-only", TOOLCHAIN)
]
LogFormat = Annotated[
    str, _option("log-format", "text | json (one object a line, each job's lines with its id)", LOGGING)
]
ShutdownGrace = Annotated[
    float,
    _option(
        "shutdown-grace", "on SIGTERM: seconds running jobs get to finish before they are interrupted", JOBS, min=0
    ),
]
WarmUp = Annotated[
    list[str],
    _option(
        "warm-up",
        "evaluate this task's template at the start, so its kernels are cached before the first request",
        EVALUATIONS,
    ),
]
Calibrate = Annotated[
    int,
    _option(
        "calibrate",
        "after each --warm-up task's warm-up, this many more A/A requests of its template: the slot's noise floor "
        "(kcoral calibrate) before the first request",
        EVALUATIONS,
        min=0,
        max=MAX_CALIBRATION_REQUESTS,
    ),
]
MetricsPublic = Annotated[
    bool,
    _flag(
        "metrics-public",
        "serve /metrics (Prometheus) without a token; with a tokens file it wants one otherwise",
        LISTEN,
    ),
]
PublicBoard = Annotated[
    bool,
    _flag(
        "public-board",
        "each task's board (kcoral best, /ui/tasks/TASK) shows a token the other tokens' best scores "
        "too, ranked and anonymised; without it a token sees its own alone (an operator sees every token's)",
        LISTEN,
    ),
]
Ray = Annotated[
    str, _option("ray", "a Ray cluster's address: run jobs on its hosts' agents (`kcoral agent`), not here", CLUSTER)
]


Limit = Annotated[
    list[str],
    typer.Option(
        "--limit",
        help="NAME=VALUE (repeatable; also KCORAL_LIMIT_NAME=VALUE, which this wins over): a job or connection "
        "limit, e.g. memory_bytes=16GiB, pids=1024, connection_total=500. The limits, with their defaults: "
        + "; ".join(f"{line}" for line in help_table().splitlines()),
        show_default=False,
        rich_help_panel=JOBS,
    ),
]


def parse_limits(pairs: list[str]) -> tuple[Limits, ConnectionLimits]:
    """The job and connection limits: KCORAL_LIMIT_NAME from the environment, then each ``--limit
    NAME=VALUE`` over it; a bad one is a usage error that names it."""
    values = from_environment(os.environ)
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise typer.BadParameter(f"--limit takes NAME=VALUE, got {pair!r}")
        values[name.strip().lower()] = value
    try:
        return with_limits(values)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


def parse_gpus(value: str) -> str | tuple[int, ...]:
    if value in ("auto", "none"):
        return value
    try:
        return tuple(int(x) for x in value.split(",") if x.strip())
    except ValueError:
        raise typer.BadParameter("use auto, none, or GPU indices like 0,1") from None


def parse_env(pairs: list[str]) -> dict[str, str]:
    env = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise typer.BadParameter(f"--job-env takes NAME=VALUE, got {pair!r}")
        env[name] = value
    return env


def job_host(
    *,
    gpus: str,
    cpu_slots: int,
    image: str,
    host_toolchain: bool,
    toolchain_mounts: list[str] | tuple[str, ...] = (),
    gpu_mode: str,
    python: str,
    job_env: list[str],
    tasks_dir: list[Path] | tuple[Path, ...],
    standby: bool,
    limit: list[str] | tuple[str, ...] = (),
    job_cgroup: str = "kcoral",
) -> dict[str, Any]:
    """The Settings fields that the shared options make (both commands read them the same way)."""
    if gpu_mode not in ("auto", "runtime", "devices"):
        raise typer.BadParameter("--gpu-mode must be auto, runtime or devices")
    if job_cgroup and not JOB_CGROUP_NAME.fullmatch(job_cgroup):
        raise typer.BadParameter(f"--job-cgroup takes {JOB_CGROUP_RULE} ({job_cgroup!r})")
    limits, connections = parse_limits(list(limit))
    return {
        "limits": limits,
        "connections": connections,
        "gpus": parse_gpus(gpus),
        "cpu_slots": cpu_slots,
        "image": image or ("kcoral-toolchain:latest" if host_toolchain else "kcoral-job:cpu"),
        "toolchain_mounts": tuple(toolchain_mounts or DEFAULT_TOOLCHAIN_MOUNTS) if host_toolchain else (),
        "gpu_mode": gpu_mode,
        "python": python,
        "job_env": parse_env(job_env),
        "tasks_dirs": tuple(tasks_dir),
        "standby": standby,
        "job_cgroup": job_cgroup,
    }
