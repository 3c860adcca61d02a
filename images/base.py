"""Build the local Debian base image ``kcoral-base:bookworm`` with debootstrap + docker import."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import docker

from kcoral.images.errors import ImageBuildError
from kcoral.images.mirror import debian_mirror
from kcoral.images.refs import IMAGE_LABEL, IMAGE_REFS, split_ref
from kcoral.images.util import image_id, remove_replaced

SUITE = "bookworm"
PACKAGES = ("python3", "python3-pip", "ca-certificates")
IMPORT_CHANGES = [
    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "ENV LANG=C.UTF-8",
    "ENV PYTHONDONTWRITEBYTECODE=1",
    f"LABEL {IMAGE_LABEL}=base",
    'CMD ["python3"]',
]
# debootstrap "I:" lines worth showing; the per-package ones are dropped.
_PROGRESS = (
    "I: Retrieving InRelease",
    "I: Retrieving Release",
    "I: Resolving",
    "I: Retrieving packages",
    "I: Installing",
    "I: Unpacking the base",
    "I: Configuring the base",
    "I: Base system",
)


def _require_tools() -> None:
    if os.geteuid() != 0:
        raise ImageBuildError("building the base image needs root (debootstrap): run as root or with sudo")
    if shutil.which("debootstrap") is None:
        raise ImageBuildError("debootstrap not found: apt-get install debootstrap")
    if shutil.which("tar") is None:
        raise ImageBuildError("tar not found: apt-get install tar")


def _debootstrap(rootfs: Path, log: Callable[[str], None]) -> None:
    src = debian_mirror(SUITE)
    cmd = ["debootstrap", "--variant=minbase", f"--include={','.join(PACKAGES)}"]
    if src.signed_by and Path(src.signed_by).is_file():
        cmd.append(f"--keyring={src.signed_by}")
    cmd += [SUITE, str(rootfs), src.uri]
    log(f"base: {' '.join(cmd)}")
    tail: list[str] = []
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.rstrip()
            tail = (tail + [line])[-30:]
            if line.startswith(_PROGRESS) or line.startswith(("E:", "W:")):
                log(f"base: {line}")
    if proc.returncode != 0:
        raise ImageBuildError(
            f"debootstrap failed (exit {proc.returncode}) using mirror {src.uri}; last output:\n"
            + "\n".join(tail)
            + "\n(check network access to the mirror, or set KCORAL_DEBIAN_MIRROR)"
        )


def _slim(rootfs: Path) -> None:
    """Drop apt caches and package lists: the image never runs apt."""
    for sub in ("var/cache/apt/archives", "var/lib/apt/lists", "var/cache/apt"):
        d = rootfs / sub
        if not d.is_dir():
            continue
        for p in d.iterdir():
            if p.is_file() or p.is_symlink():
                p.unlink()


def _tar(rootfs: Path, out: Path) -> None:
    cmd = [
        "tar",
        "--numeric-owner",
        "-C",
        str(rootfs),
        "--exclude=./dev/*",
        "--exclude=./proc/*",
        "--exclude=./sys/*",
        "-cf",
        str(out),
        ".",
    ]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise ImageBuildError(f"tar of the base rootfs failed: {res.stderr.strip()}")


def _unmount_below(path: Path) -> None:
    """Unmount anything (proc, sys, ...) a failed debootstrap left mounted inside ``path``."""
    prefix = str(path.resolve()) + "/"
    try:
        mounts = [ln.split()[1] for ln in Path("/proc/mounts").read_text().splitlines()]
    except OSError:
        return
    for mnt in sorted((m for m in mounts if m.startswith(prefix)), key=len, reverse=True):
        subprocess.run(["umount", "-l", mnt], capture_output=True)


def _cleanup(tmp: Path) -> None:
    _unmount_below(tmp)
    if any(ln.split()[1].startswith(str(tmp) + "/") for ln in Path("/proc/mounts").read_text().splitlines()):
        raise ImageBuildError(f"{tmp} still has mounts inside; unmount them and remove it by hand")
    shutil.rmtree(tmp, ignore_errors=True)


def build_base_image(client: docker.DockerClient, force: bool = False, log: Callable[[str], None] = print) -> str:
    """Make ``kcoral-base:bookworm`` if missing (or ``force``); return its image id."""
    ref = IMAGE_REFS["base"]
    old = image_id(client, ref)
    if old and not force:
        return old
    _require_tools()
    start = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="kcoral-base-", dir=os.environ.get("KCORAL_BUILD_TMP")))
    try:
        rootfs = tmp / "rootfs"
        rootfs.mkdir()
        _debootstrap(rootfs, log)
        _slim(rootfs)
        tarball = tmp / "rootfs.tar"
        _tar(rootfs, tarball)
        log(f"base: importing {tarball.stat().st_size / 2**20:.0f} MiB rootfs as {ref}")
        repo, tag = split_ref(ref)
        try:
            client.api.import_image(src=str(tarball), repository=repo, tag=tag, changes=IMPORT_CHANGES)
        except docker.errors.DockerException as exc:
            raise ImageBuildError(f"docker import of the base rootfs failed: {exc}") from exc
    finally:
        _cleanup(tmp)
    new = image_id(client, ref)
    if new is None:
        raise ImageBuildError(f"docker import finished but {ref} is not present; see dockerd's log")
    remove_replaced(client, old, new)
    log(f"base: built {ref} ({new[:19]}) in {time.monotonic() - start:.1f}s")
    return new
