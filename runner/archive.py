"""Tar safety on the way in (the sent directory) and file safety on the way out (job outputs).

Nothing here follows a link the job or the client made: members are checked by name and type
before anything is written, and output files are opened with O_NOFOLLOW after an lstat.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import shutil
import stat
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from runner.errors import BadRequest, NotFound, PayloadTooLarge
from runner.limits import Limits
from runner.models import OutputFile

_CHUNK = 1 << 20


def _clean_member_name(name: str) -> str:
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise BadRequest(f"the upload has an absolute path: {name!r}")
    norm = posixpath.normpath(name)
    if norm == ".":
        return norm
    if norm.startswith("../") or norm == ".." or "/../" in f"/{name}/":
        raise BadRequest(f"the upload has a path leaving the sent directory: {name!r}")
    if "\x00" in name:
        raise BadRequest(f"the upload has a NUL byte in a name: {name!r}")
    return norm


def _link_stays_inside(member_path: str, target: str) -> bool:
    if target.startswith("/"):
        return False
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(member_path), target))
    return not (resolved == ".." or resolved.startswith("../"))


def extract_upload(tar_path: Path, dest: Path, limits: Limits) -> int:
    """Validate the whole tar first, then extract it into ``dest``; return the file count.

    Accepted: regular files, directories, and symbolic links whose target stays inside.
    Refused with a 4xx: absolute paths, '..', links leading outside, hard links, devices,
    FIFOs, and archives over the file-count or unpacked-byte budget.
    """
    try:
        with tarfile.open(tar_path, "r:*") as tar:
            members = _checked_members(tar, limits)
            dest.mkdir(parents=True, exist_ok=True)
            for name, member in members:
                _extract_one(tar, member, dest / name)
    except tarfile.TarError as exc:
        raise BadRequest(f"the upload is not a readable tar archive: {exc}") from None
    return sum(1 for _, m in members if m.isfile())


def _checked_members(tar: tarfile.TarFile, limits: Limits) -> list[tuple[str, tarfile.TarInfo]]:
    members: list[tuple[str, tarfile.TarInfo]] = []
    total = 0
    seen: set[str] = set()
    for member in tar:
        name = _clean_member_name(member.name)
        if name == ".":
            continue
        if member.isfile():
            total += member.size
        elif member.issym():
            if not _link_stays_inside(name, member.linkname):
                raise BadRequest(f"the upload has a link leading outside: {name!r} -> {member.linkname!r}")
        elif member.islnk():
            raise BadRequest(f"the upload has a hard link ({name!r}); send a copy of the file instead")
        elif not member.isdir():
            raise BadRequest(f"the upload has a device, FIFO or other special file: {name!r}")
        if name in seen:
            raise BadRequest(f"the upload names {name!r} twice")
        seen.add(name)
        members.append((name, member))
        if len(members) > limits.upload_files:
            raise PayloadTooLarge(f"the upload has more than {limits.upload_files} entries")
        if total > limits.unpacked_bytes:
            raise PayloadTooLarge(f"the upload unpacks to more than {limits.unpacked_bytes} bytes")
    # A member may not be written through a link an earlier member made.
    links = {name for name, m in members if m.issym()}
    for name, _ in members:
        parts = name.split("/")
        for i in range(1, len(parts)):
            if "/".join(parts[:i]) in links:
                raise BadRequest(f"the upload writes {name!r} through a symbolic link")
    return members


def _extract_one(tar: tarfile.TarFile, member: tarfile.TarInfo, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
    if member.isdir():
        target.mkdir(exist_ok=True, mode=0o755)
        os.chmod(target, 0o755)
    elif member.issym():
        os.symlink(member.linkname, target)
    else:
        mode = 0o755 if member.mode & 0o111 else 0o644
        src = tar.extractfile(member)
        assert src is not None
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
        with src, os.fdopen(fd, "wb") as out:
            shutil.copyfileobj(src, out, _CHUNK)
        os.chmod(target, mode)


@dataclass
class DirUsage:
    bytes: int = 0
    entries: int = 0


def dir_usage(root: Path, stop_after_entries: int) -> DirUsage:
    """Bytes allocated and entries below ``root``, never following links; stops counting early."""
    usage = DirUsage()
    stack = [root]
    while stack:
        try:
            with os.scandir(stack.pop()) as it:
                for entry in it:
                    usage.entries += 1
                    if usage.entries > stop_after_entries:
                        return usage
                    st = entry.stat(follow_symlinks=False)
                    usage.bytes += max(st.st_size if stat.S_ISREG(st.st_mode) else 0, st.st_blocks * 512)
                    if stat.S_ISDIR(st.st_mode):
                        stack.append(Path(entry.path))
        except OSError:
            continue
    return usage


@dataclass
class Collected:
    files: list[OutputFile] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


def collect_outputs(raw: Path, dest: Path, limits: Limits) -> Collected:
    """Copy the regular files a job left in ``raw`` into ``dest`` within the output budgets.

    Symbolic links, FIFOs, sockets and devices are refused (named in ``refused``), as is
    everything past the byte or file budget. ``raw`` must no longer be writable by the job.
    """
    result = Collected()
    budget = limits.output_bytes
    dest.mkdir(parents=True, exist_ok=True)
    for rel in _walk_nofollow(raw, limits.output_files * 4):
        src = raw / rel
        try:
            st = os.lstat(src)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            continue
        if not stat.S_ISREG(st.st_mode):
            result.refused.append(f"{rel}: not a regular file (link, FIFO, socket or device)")
            continue
        if len(result.files) >= limits.output_files:
            result.refused.append(f"{rel}: over the {limits.output_files}-file output budget")
            continue
        if st.st_size > budget:
            result.refused.append(f"{rel}: {st.st_size} bytes is over the remaining output budget")
            continue
        copied = _copy_nofollow(src, dest / rel, budget)
        if copied is None:
            result.refused.append(f"{rel}: could not be read safely")
            continue
        size, digest = copied
        budget -= size
        result.files.append(OutputFile(path=rel, size=size, sha256=digest))
    return result


def _walk_nofollow(root: Path, max_entries: int) -> list[str]:
    out: list[str] = []
    stack = [""]
    while stack and len(out) < max_entries:
        rel_dir = stack.pop()
        try:
            entries = sorted(os.scandir(root / rel_dir), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if entry.is_dir(follow_symlinks=False):
                stack.append(rel)
            else:
                out.append(rel)
    return sorted(out)


def _copy_nofollow(src: Path, dst: Path, budget: int) -> tuple[int, str] | None:
    try:
        fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    digest = hashlib.sha256()
    size = 0
    with os.fdopen(fd, "rb") as fin:
        if not stat.S_ISREG(os.fstat(fin.fileno()).st_mode):
            return None
        dst.parent.mkdir(parents=True, exist_ok=True)
        with open(dst, "wb") as fout:
            while chunk := fin.read(_CHUNK):
                size += len(chunk)
                if size > budget:
                    fout.close()
                    dst.unlink()
                    return None
                digest.update(chunk)
                fout.write(chunk)
    return size, digest.hexdigest()


def safe_output_path(root: Path, rel: str) -> Path:
    """Resolve a client-given output path inside ``root`` or raise BadRequest."""
    name = _clean_member_name(rel)
    path = root / name
    if name == "." or not path.is_file() or path.is_symlink():
        raise NotFound(f"no output file named {rel!r}")
    return path
