"""What an evaluation sends as its submission (``kcoral eval``, ``Client.evaluate``): a folder holding the
file the task's worker imports, or one .py file (a suite's native form: a KernelBench ModelNew file, a
GPU MODE submission) put in a folder of its own under that file's name."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from kcoral.cli.client import KcoralClient
from kcoral.protocol.errors import UsageError

SOLUTION_FILE = "solution.py"
#: the files a submission's worker imports: kcoral's tasks' and KernelBench's solution.py, GPU MODE's
#: submission.py (the task's contract names its own: ``kcoral tasks show``)
SUBMISSION_FILES = (SOLUTION_FILE, "submission.py")


def check_submission(submission: Path) -> None:
    """UsageError unless ``submission`` is a folder with a submission file or one .py file (before any
    request: a bad path is the caller's error whether or not a server answers)."""
    if submission.is_dir():
        if not any((submission / name).is_file() for name in SUBMISSION_FILES):
            raise UsageError(
                f"{submission} has no {SOLUTION_FILE} (a GPU MODE problem's: submission.py): "
                "the submission must define it"
            )
    elif not (submission.is_file() and submission.suffix == ".py"):
        raise UsageError(f"{submission}: not a directory or a .py file")


@contextlib.contextmanager
def submission_folder(client: KcoralClient, task: str, submission: Path) -> Iterator[Path]:
    """The folder to send for a checked ``submission``: the folder itself, or for one .py file a folder
    named after it (the default label's name) holding it under the file name the task's worker imports
    (solution.py, a GPU MODE problem's submission.py), for as long as the block runs."""
    if submission.is_dir():
        yield submission
        return
    name = Path(client.task(task).submission_file).name or SOLUTION_FILE
    with tempfile.TemporaryDirectory(prefix="kcoral-submission-") as scratch:
        folder = Path(scratch) / submission.stem
        folder.mkdir()
        shutil.copyfile(submission, folder / name)
        yield folder
