"""``kcoral images build``: build the job images that are missing and print their digests."""

from __future__ import annotations

import sys

import docker
import docker.errors
import typer

from images.build import BUILDERS, DEFAULT_IMAGES, build_images
from images.errors import ImageBuildError

images_app = typer.Typer(help="Build and inspect kcoral's job images.", no_args_is_help=True)


@images_app.command("build")
def build(
    images: list[str] = typer.Argument(None, help=f"images to build: {', '.join(BUILDERS)} "
                                                  f"(default: {' '.join(DEFAULT_IMAGES)})"),
    force: bool = typer.Option(False, help="rebuild even when the image exists"),
) -> None:
    """Build what is missing (a Debian base made locally, the CPU job image, the toolchain image)."""
    try:
        client = docker.from_env(timeout=600)
        built = build_images(client, images or DEFAULT_IMAGES, force,
                             log=lambda msg: print(msg, file=sys.stderr, flush=True))
    except (ImageBuildError, docker.errors.DockerException) as exc:
        typer.echo(f"kcoral images build: {exc}", err=True)
        raise typer.Exit(1) from None
    for ref, digest in built.items():
        typer.echo(f"{ref} {digest}")
