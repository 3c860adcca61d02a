"""Small helpers shared by the image builders."""

from __future__ import annotations

import contextlib

import docker
import docker.errors

from kcoral.images.errors import ImageBuildError
from kcoral.runner.settings import JOB_UID


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


def run_as_job(client: docker.DockerClient, ref: str, command: list[str], what: str) -> str:
    """Run ``command`` in ``ref`` the way jobs run (uid 65534, read-only rootfs, tmpfs /tmp, no
    network); return its output, or raise ImageBuildError saying ``what`` failed."""
    try:
        out = client.containers.run(
            ref,
            command,
            user=f"{JOB_UID}:{JOB_UID}",
            read_only=True,
            tmpfs={"/tmp": "rw,exec,size=256m"},
            environment={"HOME": "/tmp/home"},
            network_disabled=True,
            remove=True,
        )
    except docker.errors.ContainerError as exc:
        detail = (exc.stderr or b"").decode(errors="replace").strip()[-1500:]
        raise ImageBuildError(f"{ref}: {what} failed as uid 65534 (exit {exc.exit_status}): {detail}") from None
    except docker.errors.DockerException as exc:
        raise ImageBuildError(f"{ref}: {what} failed as uid 65534: {exc}") from exc
    return out.decode(errors="replace").strip()
