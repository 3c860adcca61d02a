"""Who is who in an evaluation: the trusted workers the supervisor starts beside itself, and the file
by which the server tells the judge which cgroup is the candidate's. Stdlib only (in the containers);
tasks.harness.supervise, tasks.harness.supervisor and tasks.evaluate share it.
"""

from __future__ import annotations

#: in the channel's folder: the candidate container's cgroup folder name, written by the server
CANDIDATE_CGROUP_FILE = "candidate.cgroup"

#: the trusted workers started when a case is timed, in this order (tasks.harness.supervisor), and
#: how tasks.harness.worker is told which it is
TRUSTED_WORKERS = {"baseline": "--baseline", "empty call": "--null"}
