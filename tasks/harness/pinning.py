"""Every thread of this process onto one set of cores, and back.

While a workload is timed (CPU and GPU tasks alike), the supervisor, the baseline's worker, the empty
call's worker and the candidate's worker run on one core of the lease, taking turns (a call is made
while the others wait): whatever else the host runs there slows both sides alike, instead of one process more than the
other as the scheduler moves them around (seen under load: an identical candidate measured 1.46x
[1.15, 2.23]; on the H200 the KDA template's speedups over four requests spread 8.6% unpinned, 2.2%
pinned; bench/results).
"""

from __future__ import annotations

import contextlib
import os

#: the cores this process may use as it started (what unpinning goes back to)
STARTED_ON = frozenset(os.sched_getaffinity(0))


def pin(cpus: frozenset[int] | None) -> None:
    """Every thread of this process (those that exist now; later ones inherit the caller's) onto
    ``cpus``; None: back to :data:`STARTED_ON`."""
    target = cpus or STARTED_ON
    for tid in os.listdir("/proc/self/task"):
        with contextlib.suppress(OSError):  # a thread that ended meanwhile, or a core not ours
            os.sched_setaffinity(int(tid), target)


def timing_core() -> int | None:
    """The core a timed CPU case runs on: the lowest of this process's, when it has more than one."""
    return min(STARTED_ON) if len(STARTED_ON) > 1 else None
