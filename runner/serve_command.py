"""``kcoral serve``: parse options (runner.server_options) into Settings, refuse unsafe binds, run uvicorn."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import typer

from kcoral.protocol.install import install_hint
from kcoral.runner import server_options as opts
from kcoral.runner.logsetup import FORMATS, configure
from kcoral.runner.settings import Settings


def serve(
    host: opts.Host = "127.0.0.1",
    port: opts.Port = 8901,
    data_dir: opts.DataDir = Path("kcoral-data"),
    gpus: opts.Gpus = "auto",
    cpu_slots: opts.CpuSlots = 2,
    tokens_file: opts.TokensFile = None,
    image: opts.Image = "",
    host_toolchain: opts.HostToolchain = False,
    toolchain_mount: opts.ToolchainMount = [],  # noqa: B006 - typer's default, never mutated
    ncu_image: opts.NcuImage = "kcoral-ncu:latest",
    iket_image: opts.IketImage = "kcoral-iket:latest",
    gpu_mode: opts.GpuMode = "auto",
    driver_mount: opts.DriverMount = [],  # noqa: B006
    python: opts.Python = "python3",
    job_env: opts.JobEnv = [],  # noqa: B006
    tasks_dir: opts.TasksDir = [],  # noqa: B006
    log_level: opts.LogLevel = "info",
    log_format: opts.LogFormat = "text",
    shutdown_grace: opts.ShutdownGrace = 30.0,
    standby: opts.Standby = True,
    job_cgroup: opts.JobCgroup = "kcoral",
    warm_up: opts.WarmUp = [],  # noqa: B006
    calibrate: opts.Calibrate = 0,
    metrics_public: opts.MetricsPublic = False,
    public_board: opts.PublicBoard = False,
    ray: opts.Ray = "",
    limit: opts.Limit = [],  # noqa: B006 - typer's default, never mutated
) -> None:
    """Run the kcoral job server."""
    if log_format not in FORMATS:
        raise typer.BadParameter("--log-format must be text or json")
    if calibrate and not warm_up:
        raise typer.BadParameter("--calibrate follows each --warm-up TASK's warm-up: name a task with --warm-up")
    settings = Settings(
        host=host,
        port=port,
        data_dir=data_dir,
        tokens_file=tokens_file,
        driver_mounts=tuple(driver_mount),
        ncu_image=ncu_image,
        iket_image=iket_image,
        shutdown_grace_s=shutdown_grace,
        **opts.job_host(
            gpus=gpus,
            cpu_slots=cpu_slots,
            image=image,
            host_toolchain=host_toolchain,
            toolchain_mounts=toolchain_mount,
            gpu_mode=gpu_mode,
            python=python,
            job_env=job_env,
            tasks_dir=[d.resolve() for d in tasks_dir],
            standby=standby,
            job_cgroup=job_cgroup,
            limit=limit,
        ),
        warm_up=tuple(dict.fromkeys(warm_up)),
        calibrate=calibrate,
        ray_address=ray,
        metrics_public=metrics_public,
        public_board=public_board,
    )
    refusal = _refusal(settings)
    if refusal:
        typer.echo(refusal, err=True)
        raise typer.Exit(2)
    from kcoral.protocol.errors import KcoralError
    from kcoral.runner.app import create_app, run_server
    from kcoral.runner.warmup import template

    configure(log_level, log_format)
    try:
        for task_id in settings.warm_up:
            template(settings.tasks_dirs, task_id)
        app = create_app(settings)
    except (KcoralError, ValueError) as exc:
        typer.echo(f"kcoral serve: {getattr(exc, 'message', exc)}", err=True)
        raise typer.Exit(2) from None
    run_server(app, host, port, log_level, log_format)


def _refusal(settings: Settings) -> str | None:
    """Why the server must not start with ``settings`` (None: it may)."""
    exposed = settings.exposed_secrets()
    if exposed:
        return f"refusing to start: {'; '.join(exposed)}: move it out of the toolchain mounts"
    if settings.ray_address and importlib.util.find_spec("ray") is None:
        return f"kcoral serve: --ray needs Ray, which is not installed here: {install_hint('ray')}"
    if not settings.is_loopback and settings.tokens_file is None:
        return f"refusing to listen on {settings.host} without --tokens-file: anyone could run jobs"
    return None
