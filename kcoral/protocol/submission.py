"""THE digest of a submission, and the label a candidate gets when none is given.

A submission's digest is a sha256 over its files, whatever order they came in: each regular file's
path and the sha256 of its bytes (a symbolic link's: of its target), sorted by path, hashed once more.
The same files give the same digest however the tar that carried them was packed (member order,
mtimes, owners, modes, folders, compression), so two candidates that differ in nothing a job can read
of them get the same digest. The server computes it from the tar it received (it never trusts the
client's), the client from the tar it is about to send, for the label's short hash
(:func:`default_label`): both read the tar through :func:`tar_digest`. Stdlib only.
"""

from __future__ import annotations

import hashlib
import tarfile
from collections.abc import Iterable
from pathlib import Path

from kcoral.protocol.printable import is_control
from kcoral.protocol.relpath import relative_inside

#: hex digits of the digest in a default label
LABEL_DIGITS = 8
#: the most characters of the folder's name in a default label
LABEL_NAME_CHARS = 60
_CHUNK = 1 << 20


def submission_digest(files: Iterable[tuple[str, str]]) -> str:
    """The digest of a submission from its files' (path, sha256 of the content) pairs, in any order."""
    h = hashlib.sha256()
    for path, digest in sorted((p.encode("utf-8", "surrogateescape"), d) for p, d in files):
        h.update(b"%d:%b\0%b\n" % (len(path), path, digest.encode()))
    return h.hexdigest()


def link_digest(target: str) -> str:
    """What stands for a symbolic link's content in :func:`submission_digest`: its target, hashed."""
    return hashlib.sha256(b"symlink\0" + target.encode("utf-8", "surrogateescape")).hexdigest()


def _member_path(name: str) -> str:
    try:
        return relative_inside(name)
    except ValueError:  # a tar the server refuses anyway: its name as it is
        return name


def tar_digest(path: str | Path) -> str:
    """The digest of the submission a tar file (plain or compressed) carries: its regular files and
    symbolic links (folders, and what else a tar may hold, count for nothing)."""
    files: list[tuple[str, str]] = []
    with tarfile.open(path, "r:*") as tar:
        for member in tar:
            if member.isfile():
                h = hashlib.sha256()
                data = tar.extractfile(member)
                assert data is not None  # a regular file's
                with data:
                    while chunk := data.read(_CHUNK):
                        h.update(chunk)
                files.append((_member_path(member.name), h.hexdigest()))
            elif member.issym():
                files.append((_member_path(member.name), link_digest(member.linkname)))
    return submission_digest(files)


def default_label(folder: str | Path, digest: str) -> str:
    """A candidate's label when none is given: its folder's name and the start of its digest
    (``softmax_v2-1a2b3c4d``); the name's control characters dropped, the name cut to
    LABEL_NAME_CHARS."""
    name = "".join(c for c in Path(folder).resolve().name if not is_control(c))[:LABEL_NAME_CHARS]
    return f"{name or 'submission'}-{digest[:LABEL_DIGITS]}"
