"""``python -P -m kcoral.tasks.harness.supervise TASK_DIR CASES_JSON OUT_DIR SOCKET CGROUP_VERSION``

The supervisor's entry point (tasks.harness.supervisor is the supervisor). When the cases time
anything, it imports torch (with tasks.harness.worker) and forks the trusted workers from itself
(the baseline's, and the empty call's: TRUSTED_WORKERS) before anything touches a device. Each then
imports the task and its kernels' packages while the supervisor goes on with its own start (on the
H200 the baseline's worker took 1.6-2 s of the start when they ran one after the other). One
import of torch in this container instead of three: ~2.5 s off a two-core host's start. The
candidate's worker is forked the same way in its own container: a timed process must start as the
others do. Forking only the trusted ones was tried first: the baseline then timed faster than the
same code in the candidate's worker, a fresh interpreter (H200, KDA pinned, the template five
times: 0.9805-0.9865x, each interval excluding 1, against 0.9954-1.0061x with all three exec'd).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from kcoral.tasks.harness import schema
from kcoral.tasks.harness.channel import Channel, pair

#: the trusted workers started when a case is timed, in this order (tasks.harness.supervisor)
TRUSTED_WORKERS = ("baseline", "empty call")


class ForkedWorker:
    """A trusted worker's process, forked from this one: what the supervisor waits for at its end."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def wait(self, timeout: float) -> int:
        """Its exit code once it has ended; subprocess.TimeoutExpired after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
            elif time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(f"trusted worker {self.pid}", timeout)
            else:
                time.sleep(0.01)
        return self.returncode


def start_workers(task_dir: Path, count: int) -> list[tuple[Channel, ForkedWorker]]:
    """``count`` trusted workers (tasks.harness.worker --baseline), each on a socket pair: our end,
    and its process. Before this process touches a device."""
    from kcoral.tasks.harness import worker  # noqa: PLC0415 - imports torch, which the workers inherit

    started: list[tuple[Channel, ForkedWorker]] = []
    for _ in range(count):
        ours, theirs = pair()
        pid = worker.fork([chan.sock for chan, _ in started] + [ours.sock])
        if pid == 0:
            worker.run_forked(["--baseline", str(task_dir), str(theirs.fileno())])
        theirs.close()
        started.append((ours, ForkedWorker(pid)))
    return started


def main(argv: list[str]) -> int:
    doc = schema.parse_cases(Path(argv[1]).read_bytes())
    workers = start_workers(Path(argv[0]), len(TRUSTED_WORKERS)) if any(c.timed for c in doc.cases) else []
    from kcoral.tasks.harness import supervisor  # noqa: PLC0415 - the supervisor proper

    return supervisor.main(argv, doc, workers)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
