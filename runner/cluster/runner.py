"""The scheduler's job runner on a cluster's front end (runner.jobrunner.JobRunner): every job runs on a
cluster host, sent and followed by runner.cluster.remotejobs; jobs that ran on while the front end was
down are followed again at its start."""

from __future__ import annotations

import threading
from collections.abc import Collection

from kcoral.protocol.models import ImageInfo
from kcoral.runner.cluster.remotejobs import RemoteJobs
from kcoral.runner.leases import Lease
from kcoral.runner.plan import RunResult
from kcoral.runner.store import JobRecord, JobStore


def on_host(job: JobRecord) -> bool:
    """Whether the job's slots are a cluster host's (HOST/SLOT), not a single server's own."""
    return "/" in job.slot


class RayRunner:
    """Jobs on the cluster's hosts (runner.cluster.remotejobs)."""

    def __init__(self, store: JobStore, remote: RemoteJobs) -> None:
        self.store = store
        self.remote = remote

    def start(self, running: list[JobRecord]) -> list[JobRecord]:
        """The hosts learnt, and told which of ``running`` are theirs: those are followed again."""
        mine = [job for job in running if on_host(job)]
        self.remote.start(mine)
        return mine

    def lease_of(self, job: JobRecord) -> Lease:
        lease = self.remote.cluster.lease_of(job.slot)
        self.remote.cluster.hold(lease)
        return lease

    def warm_up(self) -> None:
        pass  # standby containers are each host's own business

    def ready(self) -> bool:
        return True  # a host that cannot run the job says so when it is sent

    def run(self, job: JobRecord, lease: Lease, cancel: threading.Event, follow: bool = False) -> RunResult | None:
        paths = self.store.paths(job.id)

        def pinned(image: ImageInfo) -> None:
            self.store.set_image(job.id, image)

        if follow:
            return self.remote.attach(job, lease.host, paths, cancel, pinned)
        return self.remote.run(job, lease, paths, cancel, pinned)

    def after(self, job_id: str, lease: Lease) -> None:
        pass  # the host cleans up after its job (runner.cluster.hostagent)

    def tidy(self, running: Collection[str]) -> None:
        pass

    def remove_orphans(self) -> int:
        return 0

    def detach(self) -> None:
        self.remote.detach()  # jobs on cluster hosts run on: the next start follows them again

    def close(self) -> None:
        pass
