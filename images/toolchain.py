"""Build ``kcoral-toolchain:latest``: an image of empty mount points for host-toolchain jobs.

On GPU hosts without a registry, CUDA and PyTorch live on the host; the job container bind-mounts
the host's /usr /lib /lib64 /bin /opt /etc read-only over these directories.
"""

from __future__ import annotations

import io
import tarfile
import time
from collections.abc import Callable

import docker
import docker.errors

from kcoral.images.errors import ImageBuildError
from kcoral.images.refs import IMAGE_LABEL, IMAGE_REFS, split_ref
from kcoral.images.util import image_id, remove_replaced
from kcoral.runner.settings import JOB_UID, PYCACHE_MOUNT

# Directories the job container mounts over (host bind mounts, tmpfs, or Docker's own /proc /sys /dev).
MOUNT_POINTS: dict[str, int] = {
    "job": 0o755,
    "tmp": 0o1777,
    "usr": 0o755,
    "lib": 0o755,
    "lib64": 0o755,
    "bin": 0o755,
    "sbin": 0o755,
    "opt": 0o755,
    "etc": 0o755,
    PYCACHE_MOUNT.strip("/"): 0o755,  # runner.pycache: the server's bytecode of the host Python
    "proc": 0o555,
    "sys": 0o555,
    "dev": 0o755,
    "run": 0o755,
}
IMPORT_CHANGES = [
    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "ENV LANG=C.UTF-8",
    "ENV HOME=/tmp/home",
    "ENV PYTHONDONTWRITEBYTECODE=1",
    "WORKDIR /job",
    f"USER {JOB_UID}:{JOB_UID}",
    f"LABEL {IMAGE_LABEL}=toolchain",
    'CMD ["/usr/bin/python3"]',
]


def mount_point_tar() -> bytes:
    """A rootfs tarball holding only the empty, root-owned mount point directories."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, mode in MOUNT_POINTS.items():
            info = tarfile.TarInfo(name)
            info.type, info.mode, info.uid, info.gid, info.mtime = tarfile.DIRTYPE, mode, 0, 0, 0
            tar.addfile(info)
    return buf.getvalue()


def build_toolchain_image(client: docker.DockerClient, force: bool = False, log: Callable[[str], None] = print) -> str:
    """Make ``kcoral-toolchain:latest`` if missing (or ``force``); return its image id."""
    ref = IMAGE_REFS["toolchain"]
    old = image_id(client, ref)
    if old and not force:
        return old
    start = time.monotonic()
    repo, tag = split_ref(ref)
    try:
        client.api.import_image(src=mount_point_tar(), repository=repo, tag=tag, changes=IMPORT_CHANGES)
    except docker.errors.DockerException as exc:
        raise ImageBuildError(f"docker import of {ref} failed: {exc}") from exc
    new = image_id(client, ref)
    if new is None:
        raise ImageBuildError(f"docker import finished but {ref} is not present; see dockerd's log")
    remove_replaced(client, old, new)
    log(f"toolchain: built {ref} ({new[:19]}) in {time.monotonic() - start:.2f}s")
    return new
