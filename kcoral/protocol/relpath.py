"""THE rule for a relative path that must stay inside its folder: the names in an upload, an output
file a client asks for, an output name the client is about to write. Stdlib only (the client uses it)."""

from __future__ import annotations

import posixpath


def relative_inside(name: str) -> str:
    """``name`` normalised ("./a//b" -> "a/b"; "." for the folder itself) when it is a relative path
    that stays inside its folder; ValueError saying what is wrong otherwise."""
    if not name:
        raise ValueError("an empty name")
    if "\x00" in name:
        raise ValueError("a NUL byte in a name")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise ValueError("an absolute path")
    if ".." in name.split("/"):
        raise ValueError("a path leaving its folder ('..')")
    return posixpath.normpath(name)
