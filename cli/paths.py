"""Local paths: checks on paths that come from the server (output file names) before they touch the
local disk, and the folder of the client's own state (:func:`state_dir`)."""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

from kcoral.protocol.errors import ServerError, UsageError
from kcoral.protocol.relpath import relative_inside


def safe_output_path(name: str) -> PurePosixPath:
    """``name`` as a relative path that stays below the output directory, or ServerError.

    The shared rule (protocol.relpath: no empty name, NUL, absolute path or ``..``), and no backslash
    or bare "." here: a server (or anything between it and us) must not be able to write outside
    the chosen directory, on any local file system.
    """
    try:
        rel = relative_inside(name)
    except ValueError as exc:
        raise ServerError(f"refusing output path {name!r}: {exc}") from None
    if "\\" in name or rel == ".":
        raise ServerError(f"refusing output path {name!r}: a backslash, or no file name")
    return PurePosixPath(rel)


def output_destination(dest_dir: Path, name: str) -> Path:
    """Where output ``name`` goes below ``dest_dir`` (checked again after resolving existing symlinks)."""
    rel = safe_output_path(name)
    root = dest_dir.resolve()
    target = (root / Path(*rel.parts)).resolve()
    if target != root and root not in target.parents:
        raise ServerError(f"refusing output path {name!r}: it resolves outside {dest_dir}")
    return target


def state_dir() -> Path:
    """The folder of this user's kcoral state: ``$XDG_STATE_HOME/kcoral`` (default ``~/.local/state/kcoral``),
    made if missing and kept private (0700: it holds secrets, e.g. ``kcoral mcp --http``'s)."""
    base = os.environ.get("XDG_STATE_HOME") or ""
    folder = (Path(base) if os.path.isabs(base) else Path.home() / ".local" / "state") / "kcoral"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    info = folder.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():  # a link, or another user's folder
        raise UsageError(
            f"{folder} is not a folder of this user's own (a link, or another user's): kcoral keeps secrets "
            "there; remove it, or set XDG_STATE_HOME to a folder of your own"
        )
    folder.chmod(0o700)
    return folder
