"""The upload progress bar (on stderr, only for a terminal and a tar worth watching)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

from kcoral.cli.client import ProgressCallback
from kcoral.cli.output import stderr

PROGRESS_MIN_BYTES = 1024 * 1024


@contextlib.contextmanager
def upload_progress(total: int, label: str = "uploading") -> Iterator[ProgressCallback | None]:
    """Yields a progress callback, or None when no bar should be shown (not a TTY, or a small tar)."""
    if total <= PROGRESS_MIN_BYTES or not sys.stderr.isatty():
        yield None
        return
    from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        console=stderr(),
        transient=True,
    ) as bar:
        task = bar.add_task(label, total=total)

        def advance(sent: int, _total: int) -> None:
            bar.update(task, completed=sent)

        yield advance
