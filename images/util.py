"""Small helpers shared by the image builders."""

from __future__ import annotations

import contextlib

import docker
import docker.errors

from images.errors import ImageBuildError


def image_id(client: docker.DockerClient, ref: str) -> str | None:
    """Return the local image id (sha256:...) of ``ref``, or None when it is not present."""
    try:
        return str(client.images.get(ref).id)
    except docker.errors.ImageNotFound:
        return None
    except docker.errors.DockerException as exc:
        raise ImageBuildError(
            f"cannot query Docker engine for {ref}: {exc} (is dockerd running? try .ci/start-docker.sh)"
        ) from exc


def remove_replaced(client: docker.DockerClient, old_id: str | None, new_id: str) -> None:
    """Best effort: drop the image a rebuild replaced, unless containers still use it."""
    if old_id is None or old_id == new_id:
        return
    with contextlib.suppress(docker.errors.DockerException):
        client.images.remove(old_id, force=False)
