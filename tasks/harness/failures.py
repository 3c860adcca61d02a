"""How a worker describes a failure to the supervisor (and so to the submitter): the exception, then
the innermost frames of the submission's own files. Needs nothing but the standard library."""

from __future__ import annotations

import os
import traceback

#: the most frames of a failure's traceback that are reported (the innermost)
MAX_FRAMES = 6


#: the most frames of a full traceback (a check's) that are reported
MAX_FULL_FRAMES = 40


def describe(exc: BaseException, inside: str | None = None, full: bool = False) -> str:
    """One failure as the supervisor reports it: the exception (a SyntaxError with its line and
    caret), then its innermost frames: with ``inside`` (the submission's folder), only the frames of
    files below it, named relative to it (the harness's and the libraries' frames are no help to the
    submitter, and the task's files are not its business); ``full`` (a check: public workloads only)
    keeps every frame. Capped."""
    te = traceback.TracebackException.from_exception(exc)
    head = "".join(te.format_exception_only()).rstrip("\n")
    if isinstance(exc, SyntaxError):
        # "SyntaxError: message" first, its file, line and caret after: the first line is what a
        # one-line summary shows. (Any other exception already starts with "Type: message", and its
        # message may span lines of its own choosing: those are never moved.)
        lines = head.split("\n")
        head = "\n".join([lines[-1], *lines[:-1]])
    if inside is not None:
        head = head.replace(inside.rstrip("/") + "/", "")
    lines = [head[:1500]]
    frames = [f for f in te.stack if full or inside is None or _below(f.filename, inside)]
    for frame in frames[-(MAX_FULL_FRAMES if full else MAX_FRAMES) :]:
        ours = inside is not None and _below(frame.filename, inside)
        name = os.path.relpath(frame.filename, inside) if ours and inside is not None else frame.filename
        lines.append(f"  {name}, line {frame.lineno}, in {frame.name}")
        if frame.line:
            lines.append(f"    {frame.line.strip()[:200]}")
    return "\n".join(lines)[: 12000 if full else 3000]


def _below(filename: str, folder: str) -> bool:
    return os.path.realpath(filename).startswith(os.path.realpath(folder).rstrip("/") + "/")
