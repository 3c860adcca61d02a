"""Reading directories a job could write, without ever following its links or blocking on its files.

Every path is walked one component at a time from a directory descriptor the server opened
(``O_NOFOLLOW`` on each step, ``O_DIRECTORY`` on directories), so swapping a directory for a link
while the server reads cannot steer it outside. Files are opened ``O_NONBLOCK`` (a FIFO never
blocks the open), accepted only when ``fstat`` says regular, and read up to a byte cap.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class UnsafeFile(OSError):
    """The path is missing, leads through a link, or is not a regular file within its cap."""


@contextlib.contextmanager
def open_dir(root: Path) -> Iterator[int]:
    """A descriptor of ``root`` (the last component must not be a link)."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        yield fd
    finally:
        os.close(fd)


def _descend(dir_fd: int, parts: list[str]) -> int:
    """A new descriptor of the directory ``parts`` below ``dir_fd``, each step refusing links."""
    fd = os.dup(dir_fd)
    try:
        for part in parts:
            if part in ("", ".", "..") or "/" in part:
                raise UnsafeFile(f"bad path component {part!r}")
            nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_file(dir_fd: int, rel: str) -> int:
    """A descriptor of the regular file ``rel`` below ``dir_fd``, or UnsafeFile."""
    *dirs, name = rel.split("/")
    try:
        parent = _descend(dir_fd, dirs)
    except OSError as exc:
        raise UnsafeFile(f"{rel}: {exc.strerror or exc}") from None
    try:
        if name in ("", ".", ".."):
            raise UnsafeFile(f"bad file name {rel!r}")
        fd = os.open(name, _FILE_FLAGS, dir_fd=parent)
    except UnsafeFile:
        raise
    except OSError as exc:
        raise UnsafeFile(f"{rel}: {exc.strerror or exc}") from None
    finally:
        os.close(parent)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UnsafeFile(f"{rel}: not a regular file")
    return fd


def read_file(root: Path, rel: str, cap: int) -> bytes:
    """The bytes of the regular file ``root/rel``; UnsafeFile if it is not one or is over ``cap``."""
    try:
        with open_dir(root) as dir_fd:
            fd = open_file(dir_fd, rel)
    except UnsafeFile:
        raise
    except OSError as exc:
        raise UnsafeFile(f"{root}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as f:
        data = f.read(cap + 1)
    if len(data) > cap:
        raise UnsafeFile(f"{rel}: over {cap} bytes")
    return data


@dataclass(frozen=True)
class Entry:
    rel: str
    mode: int
    size: int
    blocks: int


def walk(root: Path, max_entries: int, max_depth: int = 64) -> Iterator[Entry]:
    """Every entry below ``root`` (lstat, never followed), breadth first, at most ``max_entries``."""
    count = 0
    try:
        top = os.open(root, _DIR_FLAGS)
    except OSError:
        return
    queue: list[tuple[int, str, int]] = [(top, "", 0)]
    try:
        while queue:
            fd, prefix, depth = queue.pop(0)
            try:
                names = sorted(os.listdir(fd))
                for name in names:
                    count += 1
                    if count > max_entries:
                        return
                    try:
                        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    except OSError:
                        continue
                    rel = f"{prefix}{name}"
                    yield Entry(rel, st.st_mode, st.st_size, st.st_blocks)
                    if stat.S_ISDIR(st.st_mode) and depth + 1 < max_depth:
                        try:
                            queue.append((os.open(name, _DIR_FLAGS, dir_fd=fd), rel + "/", depth + 1))
                        except OSError:
                            continue
            finally:
                os.close(fd)
    finally:
        for fd, _, _ in queue:
            os.close(fd)


def remove_tree(root: Path) -> None:
    """Remove ``root`` and everything below it, as ``shutil.rmtree`` would, but without recursion (a
    job can nest folders thousands deep) and holding one descriptor at a time: each step is relative
    to the folder's descriptor and no link is followed. Meant for trees nobody writes any more (the
    job's containers are gone); what cannot be removed is left."""
    try:
        fd = os.open(root, _DIR_FLAGS)
    except FileNotFoundError:
        return
    except OSError:  # a link or a file in its place
        with contextlib.suppress(OSError):
            os.unlink(root)
        return
    stack: list[tuple[str, list[str]]] = [("", os.listdir(fd))]
    try:
        while stack:
            name, left = stack[-1]
            if left:
                entry = left.pop()
                try:
                    os.unlink(entry, dir_fd=fd)
                    continue
                except IsADirectoryError:
                    pass
                except OSError:
                    continue
                try:
                    child = os.open(entry, _DIR_FLAGS, dir_fd=fd)
                    entries = os.listdir(child)
                except OSError:
                    continue
                os.close(fd)
                fd = child
                stack.append((entry, entries))
                continue
            stack.pop()
            if stack:  # back up through the real parent ('..' is never a link) and remove the emptied folder
                parent = os.open("..", _DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = parent
                with contextlib.suppress(OSError):
                    os.rmdir(name, dir_fd=fd)
    finally:
        os.close(fd)
    with contextlib.suppress(OSError):
        os.rmdir(root)
