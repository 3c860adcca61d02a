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
import os
import shutil
import threading
from pathlib import Path

from kcoral.runner.errors import disk_writes
from kcoral.runner.jobfs import remove_tree

#: the folder holding kcoral's part folders (runner/, tasks/, profiling/...): site-packages/kcoral in an
#: install, the checkout in an editable one (pyproject's package-dir maps them side by side in both)
PACKAGE_ROOT = Path(__file__).resolve().parents[1]
#: the packages a job's containers may mount, relative to PACKAGE_ROOT
PACKAGES = ("tasks/harness", "tasks/packs", "profiling")
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


def _files() -> list[Path]:
    return sorted(
        p
        for package in PACKAGES
        for p in (PACKAGE_ROOT / package).rglob("*")
        if p.is_file() and not p.is_symlink() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    )


def _make(parent: Path) -> tuple[Path, str]:
    files = _files()
    digest = hashlib.sha256()
    for path in files:
        data = path.read_bytes()
        digest.update(f"{path.relative_to(PACKAGE_ROOT)}\0{len(data)}\0".encode())
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
            for path in files:
                copy = partial / path.relative_to(PACKAGE_ROOT)
                copy.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, copy)
                copy.chmod(0o644)
            for folder, _dirs, _names in os.walk(partial):
                os.chmod(folder, 0o755)
            os.rename(partial, target)
    return target, full
