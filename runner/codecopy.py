"""kcoral's in-container code (the evaluation harness, the profiling summaries), copied into the data
dir so that every folder a job's containers mount comes from inside the data dir.

A job can read the mount table of its own processes and of any process in its PID namespace
(/proc/PID/mountinfo); each bind mount there shows its source's path from the root of the
filesystem that holds it. Mounting kcoral's packages from where kcoral is installed would show the
host's install path (a user's home, a checkout). From the copy, a job sees paths inside the data
dir only, and none at all of the host's layout when the data dir is a filesystem of its own.

The copy is named by its content, made once per content (atomically: a half-made copy is never
used), and copies of other contents are removed: the server holds the data dir's lock, so no other
server mounts them.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import threading
from pathlib import Path

from kcoral.runner.errors import disk_writes
from kcoral.runner.jobfs import remove_tree

#: the packages a job's containers may mount, as kcoral's subpackages' paths ("tasks/harness" is
#: kcoral.tasks.harness): the copy holds each at that path (and a job sees it at /kcoral/kcoral/<path>)
PACKAGES = ("tasks/harness", "tasks/packs", "profiling", "protocol")
FOLDER = "code"

_lock = threading.Lock()
#: data dir -> (its copy, the sha256 of the copy's contents)
_made: dict[Path, tuple[Path, str]] = {}


def code_root(data_dir: Path) -> Path:
    """The copy of :data:`PACKAGES` in ``data_dir`` (made on first use); ``root / package`` is a
    package's folder."""
    return _copy(data_dir)[0]


def code_digest(data_dir: Path) -> str:
    """The sha256 over the copy's files (paths, sizes and bytes) that jobs of ``data_dir`` mount: the
    trusted code an evaluation's judge runs, as its receipt names it (the copy's name is its start)."""
    return _copy(data_dir)[1]


def _copy(data_dir: Path) -> tuple[Path, str]:
    data_dir = data_dir.resolve()
    with _lock:
        if data_dir not in _made:
            _made[data_dir] = _make(data_dir / FOLDER)
        return _made[data_dir]


def package_folder(package: str) -> Path:
    """Where kcoral's subpackage ``package`` ("tasks/harness") is installed: its folders are mapped
    (pyproject's package-dir), so kcoral.protocol and kcoral.runner need not be side by side."""
    spec = importlib.util.find_spec("kcoral." + package.replace("/", "."))
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"kcoral.{package.replace('/', '.')} is not installed as a package")
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def _files() -> list[tuple[str, Path]]:
    """Every file of :data:`PACKAGES`: (its path in the copy, where it is)."""
    out = []
    for package in PACKAGES:
        folder = package_folder(package)
        for p in folder.rglob("*"):
            if p.is_file() and not p.is_symlink() and "__pycache__" not in p.parts and p.suffix != ".pyc":
                out.append((f"{package}/{p.relative_to(folder).as_posix()}", p))
    return sorted(out)


def _make(parent: Path) -> tuple[Path, str]:
    files = _files()
    digest = hashlib.sha256()
    for name, path in files:
        data = path.read_bytes()
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    full = digest.hexdigest()
    name = full[:16]
    target = parent / name
    with disk_writes("cannot copy kcoral's job code into the data dir"):
        parent.mkdir(exist_ok=True)
        for old in parent.iterdir():
            if old.name != name:
                remove_tree(old)
        if not target.is_dir():
            partial = parent / f".partial-{os.getpid()}"
            remove_tree(partial)
            for name, path in files:
                copy = partial / name
                copy.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, copy)
                copy.chmod(0o644)
            for folder, _dirs, _names in os.walk(partial):
                os.chmod(folder, 0o755)
            os.rename(partial, target)
    return target, full
