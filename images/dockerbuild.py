"""Run a Dockerfile build through docker-py, streaming its output to a log callable."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import docker
import docker.errors

from kcoral.images.errors import ImageBuildError
from kcoral.images.util import image_id


def docker_build(
    client: docker.DockerClient,
    context: Path,
    ref: str,
    buildargs: dict[str, str] | None = None,
    nocache: bool = False,
    log: Callable[[str], None] = print,
    prefix: str = "",
) -> str:
    """Build ``context`` (with its Dockerfile) as ``ref`` without pulling; return the image id."""
    tail: list[str] = []
    try:
        for chunk in client.api.build(
            path=str(context),
            tag=ref,
            rm=True,
            forcerm=True,
            pull=False,
            nocache=nocache,
            decode=True,
            buildargs=buildargs or {},
        ):
            if "error" in chunk:
                raise ImageBuildError(
                    f"docker build of {ref} failed: {chunk['error'].strip()}\n" + "\n".join(tail[-20:])
                )
            for line in str(chunk.get("stream", "")).splitlines():
                if line.strip():
                    tail.append(line)
                    log(f"{prefix}{line}")
    except docker.errors.DockerException as exc:
        raise ImageBuildError(f"docker build of {ref} failed: {exc}") from exc
    new = image_id(client, ref)
    if new is None:
        raise ImageBuildError(f"docker build of {ref} ended without an image; see the output above")
    return new
