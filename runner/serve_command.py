"""``kcoral serve``: parse options into Settings, refuse unsafe binds, run uvicorn."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import typer

from kcoral.protocol.models import MAX_CALIBRATION_REQUESTS
from kcoral.runner.logsetup import FORMATS, configure
from kcoral.runner.settings import DEFAULT_TOOLCHAIN_MOUNTS, Settings


def _parse_gpus(value: str) -> str | tuple[int, ...]:
    if value in ("auto", "none"):
        return value
    try:
        return tuple(int(x) for x in value.split(",") if x.strip())
    except ValueError:
        raise typer.BadParameter("use auto, none, or GPU indices like 0,1") from None


def _parse_env(pairs: list[str]) -> dict[str, str]:
    env = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise typer.BadParameter(f"--job-env takes NAME=VALUE, got {pair!r}")
        env[name] = value
    return env


def serve(
    host: str = typer.Option("127.0.0.1", help="address to listen on; non-loopback needs --tokens-file"),
    port: int = typer.Option(8901, help="TCP port"),
    data_dir: Path = typer.Option(Path("kcoral-data"), help="SQLite file and job folders live here"),
    gpus: str = typer.Option("auto", help="auto | none | comma-separated NVML indices"),
    cpu_slots: int = typer.Option(2, min=0, help="concurrent jobs without a GPU"),
    tokens_file: Path | None = typer.Option(None, help="bearer tokens, one 'NAME TOKEN' per line"),
    image: str = typer.Option(
        "", help="job image (default kcoral-job:cpu; kcoral-toolchain:latest with --host-toolchain)"
    ),
    host_toolchain: bool = typer.Option(
        False,
        help="mount the host's /usr /lib /lib64 /bin /opt /etc read-only "
        "into a near-empty image (GPU hosts without a registry)",
    ),
    toolchain_mount: list[str] = typer.Option([], help="with --host-toolchain: mount these instead of the defaults"),
    ncu_image: str = typer.Option(
        "kcoral-ncu:latest", help="image of ncu jobs (not with --host-toolchain: the host's ncu is used)"
    ),
    iket_image: str = typer.Option(
        "kcoral-iket:latest", help="image of iket jobs (not with --host-toolchain: the host's run-iket is used)"
    ),
    gpu_mode: str = typer.Option("auto", help="auto | runtime (NVIDIA container runtime) | devices (device nodes)"),
    driver_mount: list[str] = typer.Option([], help="in devices mode: driver library dirs to mount read-only"),
    python: str = typer.Option("python3", help="interpreter inside the job container"),
    job_env: list[str] = typer.Option([], help="NAME=VALUE added to every job's environment"),
    tasks_dir: Path | None = typer.Option(None, help="protected tasks directory (default: the repository's tasks/)"),
    log_level: str = typer.Option("info", help="debug | info | warning"),
    log_format: str = typer.Option("text", help="text | json (one object a line, each job's lines with its id)"),
    shutdown_grace: float = typer.Option(
        30.0, min=0, help="on SIGTERM: seconds running jobs get to finish before they are interrupted"
    ),
    standby: bool = typer.Option(
        True, help="keep a container started ahead of time per slot, for the next python job (runner.standby)"
    ),
    warm_up: list[str] = typer.Option(
        [], help="evaluate this task's template at the start, so its kernels are cached before the first request"
    ),
    calibrate: int = typer.Option(
        0,
        min=0,
        max=MAX_CALIBRATION_REQUESTS,
        help="after each --warm-up task's warm-up, this many more A/A requests of its template: the slot's "
        "noise floor (kcoral calibrate) before the first request",
    ),
    metrics_public: bool = typer.Option(
        False, help="serve /metrics (Prometheus) without a token; with a tokens file it wants one otherwise"
    ),
    ray: str = typer.Option(
        "", "--ray", help="a Ray cluster's address: run jobs on its hosts' agents (`kcoral agent`), not here"
    ),
) -> None:
    """Run the kcoral job server."""
    if log_format not in FORMATS:
        raise typer.BadParameter("--log-format must be text or json")
    if gpu_mode not in ("auto", "runtime", "devices"):
        raise typer.BadParameter("--gpu-mode must be auto, runtime or devices")
    if calibrate and not warm_up:
        raise typer.BadParameter("--calibrate follows each --warm-up TASK's warm-up: name a task with --warm-up")
    settings = Settings(
        host=host,
        port=port,
        data_dir=data_dir,
        gpus=_parse_gpus(gpus),
        cpu_slots=cpu_slots,
        tokens_file=tokens_file,
        image=image or ("kcoral-toolchain:latest" if host_toolchain else "kcoral-job:cpu"),
        toolchain_mounts=tuple(toolchain_mount or DEFAULT_TOOLCHAIN_MOUNTS) if host_toolchain else (),
        gpu_mode=gpu_mode,
        driver_mounts=tuple(driver_mount),
        python=python,
        job_env=_parse_env(job_env),
        tasks_dir=tasks_dir,
        ncu_image=ncu_image,
        iket_image=iket_image,
        shutdown_grace_s=shutdown_grace,
        standby=standby,
        warm_up=tuple(dict.fromkeys(warm_up)),
        calibrate=calibrate,
        ray_address=ray,
        metrics_public=metrics_public,
    )
    exposed = settings.exposed_secrets()
    if exposed:
        typer.echo(f"refusing to start: {'; '.join(exposed)}: move it out of the toolchain mounts", err=True)
        raise typer.Exit(2)
    if ray and importlib.util.find_spec("ray") is None:
        typer.echo(
            "kcoral serve: --ray needs Ray, which is not installed here: pip install 'kcoral-bench[ray]'", err=True
        )
        raise typer.Exit(2)
    if not settings.is_loopback and settings.tokens_file is None:
        typer.echo(f"refusing to listen on {host} without --tokens-file: anyone could run jobs", err=True)
        raise typer.Exit(2)
    from kcoral.protocol.errors import KcoralError
    from kcoral.runner.app import create_app, run_server
    from kcoral.runner.warmup import template
    from kcoral.tasks.registry import DEFAULT_TASKS_DIR

    configure(log_level, log_format)
    try:
        for task_id in settings.warm_up:
            template(settings.tasks_dir or DEFAULT_TASKS_DIR, task_id)
        app = create_app(settings)
    except (KcoralError, ValueError) as exc:
        typer.echo(f"kcoral serve: {getattr(exc, 'message', exc)}", err=True)
        raise typer.Exit(2) from None
    run_server(app, host, port, log_level, log_format)
