"""A worker the supervisor has lost stays lost the same way: the candidate's as its case's error,
a trusted one (the baseline's, the empty call's) as the judge's own failure, which ends the
evaluation as an infrastructure error. Asked again (a clean-up's question, as unpinning after a
timing that failed), a trusted worker must not turn into the candidate's fault: killing the empty
call's worker mid-timing once gave the submission a rejection (tasks.harness.link: no torch)."""

from __future__ import annotations

import pytest

from kcoral.tasks.harness.channel import pair
from kcoral.tasks.harness.link import CandidateGone, Worker


@pytest.mark.parametrize(("trusted", "raised"), [(True, RuntimeError), (False, CandidateGone)])
def test_a_lost_worker_fails_the_same_way_every_time_it_is_asked(trusted: bool, raised: type[Exception]) -> None:
    ours, theirs = pair()
    theirs.close()  # the worker's end: gone
    worker = Worker("empty call" if trusted else "candidate", ours, trusted=trusted, timeout=5)
    for _ in range(3):
        with pytest.raises(raised, match="worker stopped answering") as info:
            worker.ask({"op": "pin", "cpus": None})
        assert type(info.value) is raised
    ours.close()
