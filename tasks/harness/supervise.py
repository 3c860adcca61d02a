"""``python -P -m kcoral.tasks.harness.supervise TASK_DIR CASES_JSON OUT_DIR SOCKET CGROUP_VERSION``

The supervisor's entry point (tasks.harness.supervisor is the supervisor). Before anything imports
torch, it starts the baseline's worker when the cases time anything, so that the worker's imports
(torch, the task and its kernels' packages) run while the supervisor's own do rather than after
them: on the H200 the worker took 1.6-2 s of the start once they ran one after the other.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kcoral.tasks.harness import schema
from kcoral.tasks.harness.channel import Channel, pair


def start_baseline(task_dir: Path) -> tuple[Channel, subprocess.Popen[bytes]]:
    """The baseline's worker (tasks.harness.worker --baseline), on a socket pair: our end, and it."""
    ours, theirs = pair()
    proc = subprocess.Popen(
        [sys.executable, "-P", "-m", "kcoral.tasks.harness.worker", "--baseline", str(task_dir), str(theirs.fileno())],
        pass_fds=[theirs.fileno()],
    )
    theirs.close()
    return ours, proc


def main(argv: list[str]) -> int:
    doc = schema.parse_cases(Path(argv[1]).read_bytes())
    baseline = start_baseline(Path(argv[0])) if any(c.timed for c in doc.cases) else None
    from kcoral.tasks.harness import supervisor  # imports torch

    return supervisor.main(argv, doc, baseline)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
