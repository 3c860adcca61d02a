"""A job made by the server from an input it already has (a rerun's copy, a warm-up's template),
checked and unpacked as an upload is, then queued."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kcoral.protocol.models import SpecBase
from kcoral.runner.archive import extract_upload
from kcoral.runner.store import JobPaths
from kcoral.runner.submissions import submission_digest

if TYPE_CHECKING:
    from kcoral.runner.services import Services


def queue_with_input(
    svc: Services,
    owner: str,
    spec: SpecBase,
    write_input: Callable[[JobPaths], None],
    sha256: str,
    size: int,
    waiting_cap: int | None = None,
) -> str:
    """A new job of ``owner`` whose input tar (and whatever else goes beside it) ``write_input`` puts
    in the job's folder; the tar is unpacked with the upload's checks and the job queued. On any
    failure the job is gone again. Its id."""
    job = svc.store.create(owner, spec, waiting_cap=waiting_cap)
    paths = svc.store.paths(job.id)
    try:
        write_input(paths)
        extract_upload(paths.tar, paths.input, svc.settings.limits)
        submission = submission_digest(spec, paths.tar)
    except BaseException:
        svc.store.delete(job.id)
        raise
    svc.store.mark_queued(job.id, sha256, size, submission)
    svc.scheduler.wake()
    return job.id
