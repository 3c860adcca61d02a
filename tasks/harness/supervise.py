"""``python -P -m kcoral.tasks.harness.supervise TASK_DIR CASES_JSON OUT_DIR SOCKET CGROUP_VERSION CORES``

CORES: the lease's core layout (tasks.harness.cores), who runs where while a case is timed.

The supervisor's entry point (tasks.harness.supervisor is the supervisor,
tasks.harness.session its run). Before anything imports
torch, it starts the trusted workers when the cases time anything (the baseline's, and the empty
call's: TRUSTED_WORKERS), so that their imports (torch, the task and its kernels' packages) run
while the supervisor's own do rather than after them: on the H200 the baseline's worker took
1.6-2 s of the start once they ran one after the other.

Each is a fresh interpreter, started as the candidate's worker is. Forking them from the supervisor
once it had imported torch (one import instead of three: ~2.5 s off a two-core host's start) was
tried twice and undone (H200, KDA pinned; exec'd, as now, the template timed 0.9952-1.0061x over
ten evaluations on two machines): with the candidate's worker a fresh interpreter, 0.9805-0.9865x
over five, each interval excluding 1; with the candidate's worker forked the same way in its own
container, still 0.9791-0.9913x over seven (the template six times, a copy of the baseline once).
A baseline forked from the supervisor times faster than the same code in the candidate's worker:
a timed process must start as the candidate's does (bench/results/gpu-host-issue12i/fork-*-tried/).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from kcoral.tasks.harness import cores, keeper, schema
from kcoral.tasks.harness.channel import Channel, listen, pair
from kcoral.tasks.harness.roles import TRUSTED_WORKERS
from kcoral.tasks.harness.taskdef import load_task


def start_worker(task_dir: Path, role: str, core: int | None) -> tuple[Channel, subprocess.Popen[bytes]]:
    """A trusted worker (tasks.harness.worker ROLE), on a socket pair: our end, and it. Started on
    ``core`` (tasks.harness.cores) when there is one: its thread pools are then sized for one core, as
    the candidate's are in its one-core container."""
    ours, theirs = pair()
    proc = subprocess.Popen(
        [sys.executable, "-P", "-m", "kcoral.tasks.harness.worker", role, str(task_dir), str(theirs.fileno())],
        pass_fds=[theirs.fileno()],
        preexec_fn=None if core is None else lambda: os.sched_setaffinity(0, {core}),  # noqa: PLW1509 - no threads yet
    )
    theirs.close()
    return ours, proc


def main(argv: list[str]) -> int:
    doc = schema.parse_cases(Path(argv[1]).read_bytes())
    timed = any(c.timed for c in doc.cases)
    layout = cores.parse(argv[5])
    if layout.separated:  # the container has the candidate's core for its keeper alone (tasks.harness.cores)
        os.sched_setaffinity(0, os.sched_getaffinity(0) - set(layout.candidate))
    core = layout.workers
    # listening before anything imports torch: the candidate's worker connects at once and imports torch and
    # the task on its own core while the supervisor's do here (it waited for this socket, then imported: its
    # 0.9 s came after the supervisor's 2 s on a two-core host); it is accepted once the supervisor is ready
    listener = listen(argv[3])
    workers = [start_worker(Path(argv[0]), role, core) for role in TRUSTED_WORKERS.values()] if timed else []
    # a CPU task's keepers (a GPU host's cores are held awake: runner.wakeqos); the manifest alone is read
    cpu = load_task(Path(argv[0])).device == "cpu"
    keepers = [keeper.start(c) for c in layout.kept] if timed and cpu else []
    from kcoral.tasks.harness import session  # imports torch

    return session.main(argv, doc, workers, listener, keepers)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
