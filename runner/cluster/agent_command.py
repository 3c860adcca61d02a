"""``kcoral agent --ray ADDRESS``: make this GPU host one of a kcoral cluster's hosts (runner.cluster.placement).

It starts the host's agent, a detached named actor pinned to this host's Ray node, which runs the
jobs the front end sends here in this host's Docker engine, then waits. On SIGTERM or SIGINT it
drains: the host takes no new jobs, the running ones finish, then the agent goes. Killed any other
way, the agent lives on (it is detached) until ``kcoral agent`` is run again on the host, which
replaces it (the new agent removes what the old one's jobs left).
"""

from __future__ import annotations

import importlib.util
import logging
import signal
import socket
import threading
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from kcoral.protocol.install import install_hint
from kcoral.runner import server_options as opts
from kcoral.runner.logsetup import configure
from kcoral.runner.settings import Settings

log = logging.getLogger("kcoral.agent")

#: seconds between the command's checks that its agent still answers
CHECK_S = 2.0
#: seconds a draining host waits for its front end to collect the jobs that ended there
COLLECT_S = 60.0


def agent(
    ray_address: Annotated[
        str,
        typer.Option("--ray", help="the Ray cluster's address (HOST:PORT of its head)", rich_help_panel=opts.CLUSTER),
    ],
    host_name: Annotated[
        str,
        typer.Option(
            help="this host's name in the cluster (default: the machine's host name)", rich_help_panel=opts.CLUSTER
        ),
    ] = "",
    node_name: Annotated[
        str,
        typer.Option(
            help="the Ray node to pin the agent to, by its --node-name (default: the node this command joins)",
            rich_help_panel=opts.CLUSTER,
        ),
    ] = "",
    data_dir: opts.DataDir = Path("kcoral-agent-data"),
    gpus: opts.Gpus = "auto",
    cpu_slots: opts.CpuSlots = 2,
    image: opts.Image = "",
    host_toolchain: opts.HostToolchain = False,
    gpu_mode: opts.GpuMode = "auto",
    python: opts.Python = "python3",
    job_env: opts.JobEnv = [],  # noqa: B006 - typer's default, never mutated
    tasks_dir: opts.TasksDir = [],  # noqa: B006
    standby: opts.Standby = True,
    job_cgroup: opts.JobCgroup = "kcoral",
    log_level: opts.LogLevel = "info",
    limit: opts.Limit = [],  # noqa: B006 - typer's default, never mutated
) -> None:
    """Serve this GPU host's slots to a kcoral cluster's front end (`kcoral serve --ray`)."""
    from kcoral.runner.cluster.placement import HOST_NAME

    if importlib.util.find_spec("ray") is None:
        typer.echo(f"kcoral agent: Ray is not installed here: {install_hint('ray')}", err=True)
        raise typer.Exit(2)
    host = host_name or socket.gethostname().split(".")[0]
    if not HOST_NAME.fullmatch(host):
        raise typer.BadParameter(f"host name {host!r}: use letters, digits, '-', '_' or '.'")
    settings = Settings(
        data_dir=data_dir.resolve(),
        **opts.job_host(
            gpus=gpus,
            cpu_slots=cpu_slots,
            image=image,
            host_toolchain=host_toolchain,
            gpu_mode=gpu_mode,
            python=python,
            job_env=job_env,
            tasks_dir=[d.resolve() for d in tasks_dir],
            standby=standby,
            job_cgroup=job_cgroup,
            limit=limit,
        ),
    )
    from kcoral.runner.cluster.placement import connect, start_agent, token_file

    # a job that could read the cluster's token (it has no network, but its log leaves the host) would
    # give its submitter the run of every host; the data dir holds the holdout keys
    exposed = settings.exposed_secrets({"the Ray token file": token_file()})
    if exposed:
        typer.echo(
            f"kcoral agent: refusing to start: {'; '.join(exposed)}: move it out of the toolchain mounts", err=True
        )
        raise typer.Exit(2)
    configure(log_level)

    try:
        ray = connect(ray_address)
    except ValueError as exc:
        typer.echo(f"kcoral agent: {exc}", err=True)
        raise typer.Exit(2) from None
    try:
        actor = start_agent(ray, settings, host, node_name)
    except (ValueError, RuntimeError, ray.exceptions.RayError) as exc:
        typer.echo(f"kcoral agent: host {host}'s agent did not start: {exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"kcoral agent: host {host} serves the cluster at {ray_address} (SIGTERM drains it)", err=True)
    _serve_until_stopped(ray, actor, host)


def _serve_until_stopped(ray: Any, actor: Any, host: str) -> None:
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    while not stop.wait(CHECK_S):
        try:
            ray.get(actor.inventory.remote(), timeout=30)
        except Exception as exc:  # noqa: BLE001 - the agent is gone (killed, its node lost)
            typer.echo(f"kcoral agent: host {host}'s agent is gone: {exc}", err=True)
            raise typer.Exit(1) from None
    typer.echo(f"kcoral agent: draining host {host}: no new jobs; waiting for the running ones", err=True)
    while ray.get(actor.drain.remote(), timeout=30)[0]:
        time.sleep(CHECK_S / 4)
    deadline = time.monotonic() + COLLECT_S  # their front end fetches their logs and outputs
    while ray.get(actor.drain.remote(), timeout=30)[1] and time.monotonic() < deadline:
        time.sleep(CHECK_S / 4)
    ray.get(actor.close.remote(), timeout=300)
    ray.kill(actor)
    typer.echo(f"kcoral agent: host {host} left the cluster", err=True)
