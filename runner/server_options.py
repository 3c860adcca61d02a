"""The options of the commands that run jobs on a host (``kcoral serve``, ``kcoral agent``), each
defined once: its flag, its help, and the environment variable ``KCORAL_<NAME>`` that sets it when
the flag is not given (``kcoral serve --help`` lists them). A command's own default stays beside its
parameter; what both commands share is one alias here, and :func:`job_host` turns it into Settings.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from kcoral.protocol.models import MAX_CALIBRATION_REQUESTS
from kcoral.runner.settings import DEFAULT_TOOLCHAIN_MOUNTS


def _option(name: str, help: str, **kwargs: Any) -> Any:
    """``--NAME``'s typer option, also set by ``KCORAL_NAME`` (upper case, '-' as '_')."""
    return typer.Option(f"--{name}", envvar="KCORAL_" + name.upper().replace("-", "_"), help=help, **kwargs)


# --- a host's jobs: both commands ------------------------------------------------------------------
DataDir = Annotated[Path, _option("data-dir", "SQLite file and job folders live here")]
Gpus = Annotated[str, _option("gpus", "auto | none | comma-separated NVML indices")]
CpuSlots = Annotated[int, _option("cpu-slots", "concurrent jobs without a GPU", min=0)]
Image = Annotated[
    str, _option("image", "job image (default kcoral-job:cpu; kcoral-toolchain:latest with --host-toolchain)")
]
HostToolchain = Annotated[
    bool,
    typer.Option(
        "--host-toolchain/--no-host-toolchain",
        envvar="KCORAL_HOST_TOOLCHAIN",
        help="mount the host's /usr /lib /lib64 /bin /opt /etc read-only into a near-empty image (GPU hosts "
        "without a registry)",
    ),
]
GpuMode = Annotated[str, _option("gpu-mode", "auto | runtime (NVIDIA container runtime) | devices (device nodes)")]
Python = Annotated[str, _option("python", "interpreter inside the job container")]
JobEnv = Annotated[list[str], _option("job-env", "NAME=VALUE added to every job's environment")]
TasksDir = Annotated[
    list[Path],
    _option(
        "tasks-dir",
        "protected tasks directory: kcoral task folders, KernelBench problem files, GPU MODE problem folders; "
        "repeat for several (default: the repository's tasks/)",
    ),
]
Standby = Annotated[
    bool,
    typer.Option(
        "--standby/--no-standby",
        envvar="KCORAL_STANDBY",
        help="keep a container started ahead of time per slot, for the next python job (runner.standby)",
    ),
]
LogLevel = Annotated[str, _option("log-level", "debug | info | warning")]

# --- kcoral serve ---------------------------------------------------------------------------------
Host = Annotated[str, _option("host", "address to listen on; non-loopback needs --tokens-file")]
Port = Annotated[int, _option("port", "TCP port")]
TokensFile = Annotated[Path | None, _option("tokens-file", "bearer tokens, one 'NAME TOKEN' per line")]
ToolchainMount = Annotated[
    list[str], _option("toolchain-mount", "with --host-toolchain: mount these instead of the defaults")
]
NcuImage = Annotated[str, _option("ncu-image", "image of ncu jobs (not with --host-toolchain: the host's ncu is used)")]
IketImage = Annotated[
    str, _option("iket-image", "image of iket jobs (not with --host-toolchain: the host's run-iket is used)")
]
DriverMount = Annotated[list[str], _option("driver-mount", "in devices mode: driver library dirs to mount read-only")]
LogFormat = Annotated[str, _option("log-format", "text | json (one object a line, each job's lines with its id)")]
ShutdownGrace = Annotated[
    float,
    _option("shutdown-grace", "on SIGTERM: seconds running jobs get to finish before they are interrupted", min=0),
]
WarmUp = Annotated[
    list[str],
    _option(
        "warm-up", "evaluate this task's template at the start, so its kernels are cached before the first request"
    ),
]
Calibrate = Annotated[
    int,
    _option(
        "calibrate",
        "after each --warm-up task's warm-up, this many more A/A requests of its template: the slot's noise floor "
        "(kcoral calibrate) before the first request",
        min=0,
        max=MAX_CALIBRATION_REQUESTS,
    ),
]
MetricsPublic = Annotated[
    bool,
    typer.Option(
        "--metrics-public/--no-metrics-public",
        envvar="KCORAL_METRICS_PUBLIC",
        help="serve /metrics (Prometheus) without a token; with a tokens file it wants one otherwise",
    ),
]
PublicBoard = Annotated[
    bool,
    typer.Option(
        "--public-board/--no-public-board",
        envvar="KCORAL_PUBLIC_BOARD",
        help="each task's board (kcoral best, /ui/tasks/TASK) shows a token the other tokens' best scores "
        "too, ranked and anonymised; without it a token sees its own alone (an operator sees every token's)",
    ),
]
Ray = Annotated[
    str, _option("ray", "a Ray cluster's address: run jobs on its hosts' agents (`kcoral agent`), not here")
]


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
) -> dict[str, Any]:
    """The Settings fields that the shared options make (both commands read them the same way)."""
    if gpu_mode not in ("auto", "runtime", "devices"):
        raise typer.BadParameter("--gpu-mode must be auto, runtime or devices")
    return {
        "gpus": parse_gpus(gpus),
        "cpu_slots": cpu_slots,
        "image": image or ("kcoral-toolchain:latest" if host_toolchain else "kcoral-job:cpu"),
        "toolchain_mounts": tuple(toolchain_mounts or DEFAULT_TOOLCHAIN_MOUNTS) if host_toolchain else (),
        "gpu_mode": gpu_mode,
        "python": python,
        "job_env": parse_env(job_env),
        "tasks_dirs": tuple(tasks_dir),
        "standby": standby,
    }
