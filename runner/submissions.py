"""An evaluation's submission as the server keeps it (the job's input tar): its digest, its text files
within the source caps (runner.limits), and the unified diff of two of them, cut at its cap.

The text is the submission's own, unescaped: whoever shows it escapes it (kcoral.protocol.printable,
the web page's autoescape). The tar passed the upload's checks (runner.archive) before it got here.
"""

from __future__ import annotations

import difflib
import hashlib
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from kcoral.protocol.errors import BadRequest
from kcoral.protocol.evaluations import SourceDiff
from kcoral.protocol.models import JobKindName, SpecBase
from kcoral.protocol.relpath import relative_inside
from kcoral.protocol.submission import link_digest, tar_digest
from kcoral.runner.limits import Limits


def submission_digest(spec: SpecBase, tar: Path) -> str:
    """An evaluation's submission digest from the tar the server received (kcoral.protocol.submission:
    the client's is never trusted); "" for another kind of job."""
    if spec.kind != JobKindName.eval:
        return ""
    try:
        return tar_digest(tar)
    except (tarfile.TarError, OSError) as exc:  # it was unpacked a moment ago: not expected
        raise BadRequest(f"the upload cannot be read again: {exc}") from None


@dataclass(frozen=True)
class SourceFile:
    """One file of a submission: its text where it is shown, else why not (``note``)."""

    path: str
    size: int
    #: sha256 of its bytes ("" where they were not read: over a cap)
    sha256: str = ""
    #: its text (UTF-8 without NUL bytes); None where it is not shown
    text: str | None = None
    #: why it is not shown: "not text", "over 262144 bytes", "a link to X", ...
    note: str = ""


@dataclass(frozen=True)
class Sources:
    files: list[SourceFile] = field(default_factory=list)
    #: why there is nothing to show ("" when the files were read)
    missing: str = ""

    def by_path(self) -> dict[str, SourceFile]:
        return {f.path: f for f in self.files}


def read_sources(tar: Path, limits: Limits) -> Sources:
    """The files of the submission in ``tar``, sorted by path, each as text when it is one and within
    the caps (limits.source_file_bytes each, limits.source_bytes and limits.source_files in all)."""
    if not tar.is_file():
        return Sources(missing="the submission's files are not kept")
    files: list[SourceFile] = []
    shown = 0
    try:
        with tarfile.open(tar, "r:*") as archive:
            members = sorted((_path(m.name), m) for m in archive if m.isfile() or m.issym())
            for number, (path, member) in enumerate(members):
                if member.issym():
                    files.append(SourceFile(path, 0, link_digest(member.linkname), note=f"a link to {member.linkname}"))
                elif number >= limits.source_files:
                    files.append(SourceFile(path, member.size, note=f"past the first {limits.source_files} files"))
                elif member.size > limits.source_file_bytes:
                    files.append(SourceFile(path, member.size, note=f"over {limits.source_file_bytes} bytes"))
                elif shown + member.size > limits.source_bytes:
                    files.append(SourceFile(path, member.size, note=f"past {limits.source_bytes} bytes in all"))
                else:
                    source = _read(archive, path, member)
                    shown += member.size if source.text is not None else 0
                    files.append(source)
    except (tarfile.TarError, OSError) as exc:
        return Sources(missing=f"the submission's files cannot be read: {exc}")
    return Sources(files)


def _path(name: str) -> str:
    try:
        return relative_inside(name)
    except ValueError:
        return name


def _read(archive: tarfile.TarFile, path: str, member: tarfile.TarInfo) -> SourceFile:
    handle = archive.extractfile(member)
    data = handle.read() if handle is not None else b""
    digest = hashlib.sha256(data).hexdigest()
    try:
        if b"\0" in data:
            raise UnicodeDecodeError("utf-8", data, 0, 1, "a NUL byte")
        return SourceFile(path, len(data), digest, text=data.decode())
    except UnicodeDecodeError:
        return SourceFile(path, len(data), digest, note="not text")


def source_diff(a: Sources, b: Sources, limit: int) -> SourceDiff:
    """The unified diff of B against A (``a/PATH``, ``b/PATH``; a file only one has, against
    /dev/null), file by file in path order, cut at ``limit`` bytes; the files that differ; and those
    that could not be compared, with why."""
    if a.missing or b.missing:
        return SourceDiff(skipped=[f"{side}: {s.missing}" for side, s in (("A", a), ("B", b)) if s.missing])
    old, new = a.by_path(), b.by_path()
    lines: list[str] = []
    changed: list[str] = []
    skipped: list[str] = []
    for path in sorted(old.keys() | new.keys()):
        x, y = old.get(path), new.get(path)
        if x is not None and y is not None and _same(x, y):
            continue
        unshown = [f for f in (x, y) if f is not None and f.text is None]
        if unshown:
            if x is None or y is None or not x.sha256 or x.sha256 != y.sha256:
                changed.append(path)
                skipped.append(f"{path}: {unshown[0].note}")
            continue
        changed.append(path)
        lines += difflib.unified_diff(
            _lines(x),
            _lines(y),
            fromfile=f"a/{path}" if x is not None else "/dev/null",
            tofile=f"b/{path}" if y is not None else "/dev/null",
            lineterm="",
        )
    text, truncated = _cut("\n".join(lines) + ("\n" if lines else ""), limit)
    return SourceDiff(text=text, changed=changed, truncated=truncated, skipped=skipped)


def _same(x: SourceFile, y: SourceFile) -> bool:
    if x.text is not None and y.text is not None:
        return x.text == y.text
    return bool(x.sha256) and x.sha256 == y.sha256 and x.note == y.note


def _lines(f: SourceFile | None) -> list[str]:
    return (f.text or "").splitlines() if f is not None else []


def _cut(text: str, limit: int) -> tuple[str, bool]:
    """``text`` within ``limit`` bytes of UTF-8, cut at the end of a whole line; whether it was cut."""
    data = text.encode()
    if len(data) <= limit:
        return text, False
    head = data[:limit].decode(errors="ignore")
    return head[: head.rfind("\n") + 1], True
