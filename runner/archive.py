"""Tar safety on the way in (the sent directory) and file safety on the way out (job outputs).

Nothing here follows a link the job or the client made: members are checked by name and type
before anything is written, and output files are opened with O_NOFOLLOW after an lstat.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import stat
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from kcoral.protocol.errors import BadRequest, NotFound, PayloadTooLarge
from kcoral.protocol.models import OutputFile
from kcoral.protocol.printable import is_control, printable
from kcoral.protocol.relpath import relative_inside
from kcoral.runner import jobfs
from kcoral.runner.errors import disk_writes
from kcoral.runner.limits import Limits
from kcoral.runner.tarscan import scan
from kcoral.runner.tarstage import TarStager

#: the longest name of one path component (Linux NAME_MAX) and of a whole member path in an upload
#: (PATH_MAX less room for the job folder the input lands in)
NAME_BYTES = 255
PATH_BYTES = 3072
#: links followed while resolving one link target (Linux gives up at 40 as well)
LINK_HOPS = 40

_CHUNK = 1 << 20


def _clean_member_name(name: str) -> str:
    try:
        clean = relative_inside(name)
    except ValueError as exc:
        raise BadRequest(f"the upload has {exc}: {name!r}") from None
    raw = clean.encode("utf-8", "surrogateescape")
    if len(raw) > PATH_BYTES:
        raise BadRequest(f"the upload has a path of {len(raw)} bytes; the limit is {PATH_BYTES}")
    if any(len(part) > NAME_BYTES for part in raw.split(b"/")):
        raise BadRequest(f"the upload has a name over {NAME_BYTES} bytes in {clean[:80]!r}...")
    return clean


def _resolve(parts: list[str], target: str, links: dict[str, str], hops: int = 0) -> list[str] | None:
    """The folder components that ``target`` (a link's target, relative to the folder ``parts``)
    reaches when every link of the upload on the way is followed, as the kernel would follow them;
    None when it leaves the upload's folder, is absolute, or loops."""
    if target.startswith("/"):
        return None
    at = list(parts)
    for part in target.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not at:
                return None
            at.pop()
            continue
        at.append(part)
        inner = links.get("/".join(at))
        if inner is not None:
            hops += 1
            if hops > LINK_HOPS:
                return None
            reached = _resolve(at[:-1], inner, links, hops)
            if reached is None:
                return None
            at = reached
    return at


def extract_upload(tar_path: Path, dest: Path, limits: Limits, staged: TarStager | None = None) -> int:
    """Validate the whole tar first, then extract it into ``dest``; return the file count.

    Accepted: regular files, directories, and symbolic links whose target stays inside.
    Refused with a 4xx: absolute paths, '..', links leading outside, hard links, devices,
    FIFOs, and archives over the file-count or unpacked-byte budget. ``staged``: the large files
    written out while the tar arrived (runner.tarstage), moved into place instead of copied.
    """
    scan(tar_path, limits)
    try:
        with tarfile.open(tar_path, "r:*") as tar, disk_writes("cannot unpack the upload"):
            members = _checked_members(tar, limits)
            dest.mkdir(parents=True, exist_ok=True)
            plain = _plain_fd(tar)
            for name, member in members:
                ready = staged.staged(member.offset_data, member.size) if staged and plain is not None else None
                _extract_one(tar, member, dest / name, plain, ready)
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
            pass  # checked below, once every link is known
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
    links = {name: m.linkname for name, m in members if m.issym()}
    not_dirs = {name for name, m in members if not m.isdir()}
    for name, _ in members:
        parts = name.split("/")
        for i in range(1, len(parts)):
            prefix = "/".join(parts[:i])
            if prefix in links:  # a member may not be written through a link another member made
                raise BadRequest(f"the upload writes {name!r} through a symbolic link")
            if prefix in not_dirs:
                raise BadRequest(f"the upload has {prefix!r} both as a file and as a folder")
    for name, target in links.items():  # physically: every link on the way followed, as a job would
        if _resolve(name.split("/")[:-1], target, links) is None:
            raise BadRequest(f"the upload has a link leading outside: {name!r} -> {target!r}")
    return members


def _plain_fd(tar: tarfile.TarFile) -> int | None:
    """The file descriptor of an uncompressed tar (its members' data copied from it by the kernel)."""
    fileobj = tar.fileobj  # a compressed tar's is its decompressor (gzip.GzipFile, ...)
    return fileobj.fileno() if isinstance(fileobj, io.BufferedReader) else None


def _copy_range(src: int, offset: int, size: int, dst: int) -> None:
    while size > 0:
        n = os.copy_file_range(src, dst, min(size, 1 << 30), offset)
        if n == 0:
            raise BadRequest("the upload is truncated: the archive ends inside a member")
        offset += n
        size -= n


def _extract_one(
    tar: tarfile.TarFile, member: tarfile.TarInfo, target: Path, plain: int | None = None, ready: Path | None = None
) -> None:
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
    if member.isdir():
        target.mkdir(exist_ok=True, mode=0o755)
        os.chmod(target, 0o755)
    elif member.issym():
        os.symlink(member.linkname, target)
    else:
        mode = 0o755 if member.mode & 0o111 else 0o644
        if ready is not None and not member.issparse() and not os.path.lexists(target):
            os.rename(ready, target)  # the member's bytes, written while the tar arrived
            os.chmod(target, mode)
            return
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
        if plain is not None and not member.issparse():
            try:
                _copy_range(plain, member.offset_data, member.size, fd)
            finally:
                os.close(fd)
        else:
            src = tar.extractfile(member)
            assert src is not None
            with src, os.fdopen(fd, "wb") as out:
                shutil.copyfileobj(src, out, _CHUNK)
        os.chmod(target, mode)


@dataclass
class DirUsage:
    bytes: int = 0
    entries: int = 0
    #: a folder sits ``max_depth`` deep: what is below it was not counted
    too_deep: bool = False


def dir_usage(root: Path, stop_after_entries: int, max_depth: int) -> DirUsage:
    """Bytes allocated and entries below ``root``, never following links; stops counting early."""
    usage = DirUsage()
    for entry in jobfs.walk(root, stop_after_entries + 1, max_depth):
        usage.entries += 1
        usage.bytes += max(entry.size if stat.S_ISREG(entry.mode) else 0, entry.blocks * 512)
        if stat.S_ISDIR(entry.mode) and entry.rel.count("/") + 1 >= max_depth:
            usage.too_deep = True
    return usage


@dataclass
class Collected:
    files: list[OutputFile] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    #: a file was left out for the byte or file budget (the job passed its output limit, though it may
    #: have exited before a check while it ran saw it)
    over_budget: bool = False


def collect_outputs(raw: Path, dest: Path, limits: Limits) -> Collected:
    """Copy the regular files a job left in ``raw`` into ``dest`` within the output budgets.

    Symbolic links, FIFOs, sockets and devices are refused (named in ``refused``), as is
    everything past the byte or file budget. Every read is fd-relative and refuses links
    (runner.jobfs), so a tree the job rearranges while it is read cannot lead outside ``raw``.
    """
    result = Collected()
    budget = limits.output_bytes
    dest.mkdir(parents=True, exist_ok=True)
    entries = sorted(
        (e for e in jobfs.walk(raw, limits.output_files * 4, limits.output_depth) if not stat.S_ISDIR(e.mode)),
        key=lambda e: e.rel,
    )
    try:
        root_fd = os.open(raw, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return result
    try:
        for entry in entries:
            rel = entry.rel
            shown = printable(rel)  # the job chose the name: the refusal is shown to a person
            if any(is_control(c) for c in rel):
                result.refused.append(f"{shown}: a control character in its name")
                continue
            if not stat.S_ISREG(entry.mode):
                result.refused.append(f"{shown}: not a regular file (link, FIFO, socket or device)")
                continue
            if len(result.files) >= limits.output_files:
                result.refused.append(f"{shown}: over the {limits.output_files}-file output budget")
                result.over_budget = True
                continue
            if entry.size > budget:
                result.refused.append(f"{shown}: {entry.size} bytes is over the remaining output budget")
                result.over_budget = True
                continue
            copied = _copy_nofollow(root_fd, rel, dest / rel, budget)
            if copied is None:
                result.refused.append(f"{shown}: could not be read safely")
                continue
            size, digest = copied
            budget -= size
            result.files.append(OutputFile(path=rel, size=size, sha256=digest))
    finally:
        os.close(root_fd)
    return result


def _copy_nofollow(root_fd: int, rel: str, dst: Path, budget: int) -> tuple[int, str] | None:
    try:
        fd = jobfs.open_file(root_fd, rel)
    except OSError:
        return None
    digest = hashlib.sha256()
    size = 0
    with os.fdopen(fd, "rb") as fin:
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
    try:
        name = relative_inside(rel)
    except ValueError as exc:
        raise BadRequest(f"bad output path {rel!r}: {exc}") from None
    path = root / name
    if name == "." or not path.is_file() or path.is_symlink():
        raise NotFound(f"no output file named {rel!r}")
    return path
