"""Build the local kcoral images: ``build_images(client, ["cpu", "toolchain"])``.

The command line is ``kcoral images build`` (images/cli.py). ncu and iket are layers on a job image
(images/profilers.py).
"""

from __future__ import annotations

from collections.abc import Callable

import docker
import docker.errors

from kcoral.images.base import build_base_image
from kcoral.images.cpu import build_cpu_image
from kcoral.images.errors import ImageBuildError
from kcoral.images.profilers import ProfilerBuild, build_iket_image, build_ncu_image
from kcoral.images.refs import BUILDABLE, IMAGE_REFS
from kcoral.images.toolchain import build_toolchain_image
from kcoral.images.util import image_id

__all__ = ["IMAGE_REFS", "ImageBuildError", "ProfilerBuild", "build_images", "image_digest"]

Builder = Callable[[docker.DockerClient, bool, Callable[[str], None]], str]
# Build order matters: cpu is FROM base.
BUILDERS: dict[str, Builder] = {
    "base": build_base_image,
    "cpu": build_cpu_image,
    "toolchain": build_toolchain_image,
}
ProfilerBuilder = Callable[[docker.DockerClient, bool, Callable[[str], None], ProfilerBuild], str]
#: layers on a job image, built after the images above (their base may be one of them)
PROFILER_BUILDERS: dict[str, ProfilerBuilder] = {"ncu": build_ncu_image, "iket": build_iket_image}


def image_digest(client: docker.DockerClient, ref: str) -> str | None:
    """The local image id (``sha256:...``) of ``ref``, or None if it is not built.

    Local images have no registry digest, so the content-addressed image id identifies them.
    """
    return image_id(client, ref)


def build_images(
    client: docker.DockerClient,
    which: list[str],
    force: bool = False,
    log: Callable[[str], None] = print,
    profiler: ProfilerBuild = ProfilerBuild(),
) -> dict[str, str]:
    """Build the images named in ``which`` ("cpu", "toolchain"; "base", "ncu", "iket" too) that are missing.

    "cpu" implies the base image, which is built only when missing unless "base" itself is named.
    ``force`` rebuilds the named images even when present. Returns {image ref: image id} for every
    image ensured (the base included when "cpu" is named). ``profiler`` holds the ncu/iket options.
    Raises ImageBuildError.
    """
    unknown = sorted(set(which) - set(BUILDABLE))
    if unknown:
        raise ImageBuildError(f"unknown image(s) {unknown}: choose from {list(BUILDABLE)}")
    wanted = set(which)
    if "cpu" in wanted:
        wanted.add("base")
    try:
        client.ping()
    except docker.errors.DockerException as exc:
        raise ImageBuildError(f"cannot reach the Docker engine ({exc}): start it, e.g. .ci/start-docker.sh") from exc
    result: dict[str, str] = {}
    for name, builder in BUILDERS.items():
        if name in wanted:
            result[IMAGE_REFS[name]] = builder(client, force and name in which, log)
    for name, layer in PROFILER_BUILDERS.items():
        if name in wanted:
            result[IMAGE_REFS[name]] = layer(client, force, log, profiler)
    return result
