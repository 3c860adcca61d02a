"""A deterministic tar of the directory to send.

Same content -> same bytes -> same sha256, whatever the mtimes, owners or umask: entries are sorted,
mtime is 0, uid/gid 0 with empty names, modes are 0o755 (dirs, executables) or 0o644. Only regular files
and directories go in. A symlink whose target lies inside the directory is stored as what it points to
(a file's content, a directory's tree); one leading outside, a dangling one, a FIFO, a socket or a device
is refused with an InputError naming the path.

What is not sent: :data:`DEFAULT_EXCLUDES` (``.git``, ``.venv``, caches, earlier kcoral outputs) and
the patterns of a ``.kcoralignore`` file at the directory's top (gitignore syntax, matched by
``pathspec``; its lines come after the defaults, so ``!.git`` sends ``.git`` after all). Nothing is
skipped silently: the tarball lists what was left out, and the client says so.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from kcoral.protocol.errors import InputError

if TYPE_CHECKING:
    import pathspec

__all__ = ["DEFAULT_EXCLUDES", "IGNORE_FILE", "Tarball", "build_tarball"]

#: never sent unless a .kcoralignore line says otherwise (gitignore syntax)
DEFAULT_EXCLUDES = (
    ".git/",
    ".venv/",
    "venv/",
    "__pycache__/",
    "*.pyc",
    ".mypy_cache/",
    ".pytest_cache/",
    "/kcoral-out/",
)
IGNORE_FILE = ".kcoralignore"
#: DEFAULT_EXCLUDES as plain tests, for a directory without a .kcoralignore (pathspec is not
#: imported then: ~15 ms of every command's start); a test holds the two to the same answers
_EXCLUDED_DIR_NAMES = frozenset({".git", ".venv", "venv", "__pycache__", ".mypy_cache", ".pytest_cache"})
_EXCLUDED_TOP_DIRS = frozenset({"kcoral-out"})
_EXCLUDED_SUFFIX = ".pyc"


@dataclass(frozen=True)
class Tarball:
    path: Path
    sha256: str
    size: int  # bytes of the tar itself
    files: int  # regular files in it
    dirs: int
    content_bytes: int  # sum of the files' sizes
    #: what was left out (DEFAULT_EXCLUDES, .kcoralignore): the top of each skipped tree
    skipped: tuple[str, ...] = ()
    #: the largest files sent, (path, bytes), largest first
    largest: tuple[tuple[str, int], ...] = ()

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


class _HashingWriter:
    """File wrapper that hashes and counts what tarfile writes through it."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.digest = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self.digest.update(data)
        self.size += len(data)
        return self.raw.write(data)


_SPECIAL_KINDS = [
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
]


def _kind(mode: int) -> str:
    for test, name in _SPECIAL_KINDS:
        if test(mode):
            return name
    return "a special file"


class _DefaultExcludes:
    """What DEFAULT_EXCLUDES leaves out, answered as ``pathspec`` answers for those lines."""

    @staticmethod
    def match_file(path: str) -> bool:
        """``path`` relative to the top, a folder's with a trailing ``/``; also True inside an excluded folder."""
        parts = path.rstrip("/").split("/")
        folders = len(parts) if path.endswith("/") else len(parts) - 1
        for depth, name in enumerate(parts):
            if name.endswith(_EXCLUDED_SUFFIX):
                return True
            if depth < folders and (name in _EXCLUDED_DIR_NAMES or (depth == 0 and name in _EXCLUDED_TOP_DIRS)):
                return True
        return False


def exclusions(root: Path) -> pathspec.PathSpec | _DefaultExcludes:
    """DEFAULT_EXCLUDES, then the lines of ROOT/.kcoralignore (if it is a regular file)."""
    ignore = root / IGNORE_FILE
    if not (ignore.is_file() and not ignore.is_symlink()):
        return _DefaultExcludes()
    try:
        lines = [*DEFAULT_EXCLUDES, *ignore.read_text(errors="replace").splitlines()]
    except OSError as exc:
        raise InputError(f"cannot read {ignore}: {exc.strerror or exc}") from None
    import pathspec  # only for a .kcoralignore's lines

    return pathspec.GitIgnoreSpec.from_lines(lines)


class _Packer:
    def __init__(self, root: Path, tar: tarfile.TarFile) -> None:
        self.root = root
        self.real_root = os.path.realpath(root)
        self.tar = tar
        self.files = 0
        self.dirs = 0
        self.content_bytes = 0
        self.excluded = exclusions(root)
        self.skipped: list[str] = []
        self.sizes: list[tuple[int, str]] = []

    def _inside(self, real: str) -> bool:
        return real == self.real_root or real.startswith(self.real_root.rstrip(os.sep) + os.sep)

    def add_tree(self, directory: Path, arcdir: str, ancestors: frozenset[str]) -> None:
        try:
            names = sorted(os.listdir(directory))
        except OSError as exc:
            raise InputError(f"cannot read directory {directory}: {exc.strerror or exc}") from None
        for name in names:
            self.add(directory / name, f"{arcdir}/{name}" if arcdir else name, ancestors)

    def add(self, path: Path, arcname: str, ancestors: frozenset[str]) -> None:
        try:
            st = os.lstat(path)
        except OSError as exc:
            raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
        is_dir = stat.S_ISDIR(st.st_mode) or (stat.S_ISLNK(st.st_mode) and os.path.isdir(path))
        if self.excluded.match_file(arcname + ("/" if is_dir else "")):
            self.skipped.append(arcname + ("/" if is_dir else ""))
            return
        if stat.S_ISLNK(st.st_mode):
            real = os.path.realpath(path)
            if not self._inside(real):
                raise InputError(
                    f"refusing symlink {path} -> {os.readlink(path)}: it points outside {self.root}",
                    hint="copy the target into the directory, or send a directory that contains it",
                )
            try:
                st = os.stat(path)
            except OSError:
                raise InputError(f"refusing dangling symlink {path} -> {os.readlink(path)}") from None
        if stat.S_ISDIR(st.st_mode):
            real = os.path.realpath(path)
            if real in ancestors:
                raise InputError(f"refusing symlink loop at {path}")
            self._add_dir(arcname)
            self.add_tree(path, arcname, ancestors | {real})
        elif stat.S_ISREG(st.st_mode):
            self._add_file(path, arcname, st)
        else:
            raise InputError(
                f"refusing {path}: it is {_kind(st.st_mode)}; only regular files and directories can be sent"
            )

    def _info(self, arcname: str, mode: int) -> tarfile.TarInfo:
        info = tarfile.TarInfo(arcname)
        info.mtime = 0
        info.mode = mode
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        return info

    def _add_dir(self, arcname: str) -> None:
        info = self._info(arcname, 0o755)
        info.type = tarfile.DIRTYPE
        self.tar.addfile(info)
        self.dirs += 1

    def _add_file(self, path: Path, arcname: str, st: os.stat_result) -> None:
        executable = bool(st.st_mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH))
        info = self._info(arcname, 0o755 if executable else 0o644)
        info.type = tarfile.REGTYPE
        info.size = st.st_size
        try:
            with open(path, "rb") as f:
                self.tar.addfile(info, f)
        except OSError as exc:
            detail = exc.strerror or str(exc)
            raise InputError(f"cannot read {path}: {detail} (did it change while packing?)") from None
        self.files += 1
        self.content_bytes += st.st_size
        self.sizes.append((st.st_size, arcname))


def build_tarball(directory: str | Path, tmp_dir: str | Path | None = None) -> Tarball:
    """Pack ``directory`` into a temporary ``.tar`` file (the caller removes it: :meth:`Tarball.remove`)."""
    root = Path(directory)
    if not root.is_dir():
        raise InputError(f"cannot send {root}: not a directory")
    fd, name = tempfile.mkstemp(prefix="kcoral-", suffix=".tar", dir=tmp_dir)
    try:
        with os.fdopen(fd, "wb") as raw:
            writer = _HashingWriter(raw)
            with tarfile.open(  # type: ignore[call-overload]
                fileobj=writer,
                mode="w|",
                format=tarfile.PAX_FORMAT,
            ) as tar:
                packer = _Packer(root, tar)
                packer.add_tree(root, "", frozenset({os.path.realpath(root)}))
    except BaseException:
        os.unlink(name)
        raise
    return Tarball(
        path=Path(name),
        sha256=writer.digest.hexdigest(),
        size=writer.size,
        files=packer.files,
        dirs=packer.dirs,
        content_bytes=packer.content_bytes,
        skipped=tuple(packer.skipped),
        largest=tuple((name, size) for size, name in sorted(packer.sizes, reverse=True)[:3]),
    )
