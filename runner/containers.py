"""docker-py container helpers that the executor and the standby take-over share: the errors a call
to the engine raises, a job's output folder made for its user, a container removed or renamed
without an engine failure escaping."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import docker
import docker.errors
import requests.exceptions
import urllib3.exceptions

log = logging.getLogger("kcoral.executor")
#: what a call to the engine raises when it fails; urllib3's own errors reach us from a stream read
#: straight from the response (a broken connection: ProtocolError), which requests does not wrap
DOCKER_ERRORS = (docker.errors.DockerException, requests.exceptions.RequestException, urllib3.exceptions.HTTPError)


def prepare_output_dir(path: Path, uid: int) -> None:
    """A folder a container's user ``uid`` writes its outputs to (and nobody else, where we are root)."""
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        os.chown(path, uid, uid)
        os.chmod(path, 0o700)
    else:
        os.chmod(path, 0o777)


def remove(container: Any) -> bool:
    """Remove the container; False when it is left behind (the engine failed)."""
    try:
        container.remove(force=True)
    except docker.errors.NotFound:
        pass
    except DOCKER_ERRORS as exc:
        log.warning("removing %s failed: %s (removed once the engine answers)", container.id[:12], exc)
        return False
    return True


def rename(container: Any, name: str) -> None:
    """A standby's name becomes its job's (no label can be added to a container that exists); a
    failure leaves it found by its instance label, as every container of ours."""
    try:
        container.rename(name)
    except DOCKER_ERRORS as exc:
        log.warning("container %s could not be named %s: %s", container.id[:12], name, exc)
