"""``kcoral images build``: build the job images that are missing and print their digests."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from kcoral.images.refs import BUILDABLE, DEFAULT_BUILD, PROFILER_BASE

images_app = typer.Typer(help="Build and inspect kcoral's job images.", no_args_is_help=True)


@images_app.command("build")
def build(
    images: list[str] = typer.Argument(
        None, help=f"images to build: {', '.join(BUILDABLE)} (default: {' '.join(DEFAULT_BUILD)})"
    ),
    force: bool = typer.Option(False, help="rebuild even when the image exists"),
    base: str = typer.Option(PROFILER_BASE, help="the job image that ncu and iket are layered on"),
    ncu_dir: Path = typer.Option(
        None, help="the Nsight Compute installation to copy into the ncu image (default: the one of the ncu on PATH)"
    ),
) -> None:
    """Build what is missing (a Debian base made locally, the CPU job image, the toolchain image;
    on request the ncu and iket profiler layers)."""
    unknown = sorted(set(images or ()) - set(BUILDABLE))
    if unknown:
        raise typer.BadParameter(f"unknown image(s) {', '.join(unknown)}: choose from {', '.join(BUILDABLE)}")
    import docker  # here, not at the top: every kcoral command imports this module
    import docker.errors

    from kcoral.images.build import ProfilerBuild, build_images
    from kcoral.images.errors import ImageBuildError

    try:
        client = docker.from_env(timeout=600)
        built = build_images(
            client,
            images or list(DEFAULT_BUILD),
            force,
            log=lambda msg: print(msg, file=sys.stderr, flush=True),
            profiler=ProfilerBuild(base, ncu_dir),
        )
    except (ImageBuildError, docker.errors.DockerException) as exc:
        typer.echo(f"kcoral images build: {exc}", err=True)
        raise typer.Exit(1) from None
    for ref, digest in built.items():
        typer.echo(f"{ref} {digest}")
