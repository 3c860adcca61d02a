"""Checks on paths that come from the server (output file names) before they touch the local disk."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from kcoral.cli.errors import ServerError


def safe_output_path(name: str) -> PurePosixPath:
    """``name`` as a relative path that stays below the output directory, or ServerError.

    Refuses absolute paths, ``..`` components, empty names, backslashes and NUL bytes: a server
    (or anything between it and us) must not be able to write outside the chosen directory.
    """
    if not name or "\x00" in name or "\\" in name:
        raise ServerError(f"refusing output path {name!r}: empty or contains NUL/backslash")
    path = PurePosixPath(name)
    if path.is_absolute() or name.startswith("/"):
        raise ServerError(f"refusing absolute output path {name!r}")
    parts = [p for p in path.parts if p not in ("", ".")]
    if not parts or any(p == ".." for p in parts):
        raise ServerError(f"refusing output path {name!r}: it would leave the output directory")
    return PurePosixPath(*parts)


def output_destination(dest_dir: Path, name: str) -> Path:
    """Where output ``name`` goes below ``dest_dir`` (checked again after resolving existing symlinks)."""
    rel = safe_output_path(name)
    root = dest_dir.resolve()
    target = (root / Path(*rel.parts)).resolve()
    if target != root and root not in target.parents:
        raise ServerError(f"refusing output path {name!r}: it resolves outside {dest_dir}")
    return target
