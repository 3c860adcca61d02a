"""An evaluation's trusted documents (report.json, receipt.json), as every client path reads them.

Only an evaluation's: the server writes them from its judge's result, and no job of any other kind can
make one count. A ``kcoral python`` job chooses its outputs' names and content, so a report.json of its
own is a file like any other, never a score: the CLI (eval, show, rerun, calibrate), the library and the
MCP server all read reports through here.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from kcoral.cli.client import KcoralClient
from kcoral.protocol.errors import ServerError
from kcoral.protocol.models import JobView
from kcoral.tasks.documents import Document, DocumentError, parse

D = TypeVar("D", bound=Document)


def is_evaluation(view: JobView) -> bool:
    return view.spec.kind == "eval"


def load(model: type[D], output_dir: Path, view: JobView) -> D | None:
    """The document ``model`` of the evaluation ``view`` as downloaded into ``output_dir``; None when the
    job is not an evaluation or the file is missing; ServerError when it is not what a kcoral server writes."""
    path = output_dir / model.FILE
    if not is_evaluation(view) or not path.is_file():
        return None
    return _parsed(model, path.name, path.read_bytes())


def fetch(model: type[D], client: KcoralClient, view: JobView) -> D | None:
    """The document ``model`` among the evaluation ``view``'s outputs (read into memory); None when the job
    is not an evaluation or has none."""
    entry = next((o for o in view.outputs if o.path == model.FILE), None) if is_evaluation(view) else None
    if entry is None:
        return None
    return _parsed(model, f"{model.FILE} of job {view.id}", client.read_output(view.id, model.FILE, entry.sha256))


def _parsed(model: type[D], what: str, data: bytes) -> D:
    try:
        return parse(model, data)
    except DocumentError as exc:
        raise ServerError(f"{what}: not what a kcoral server writes: {exc}") from None
