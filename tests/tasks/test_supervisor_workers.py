"""A worker the supervisor has lost stays lost the same way: the candidate's as its case's error,
a trusted one (the baseline's, the empty call's) as the judge's own failure, which ends the
evaluation as an infrastructure error. Asked again (a clean-up's question, as unpinning after a
timing that failed), a trusted worker must not turn into the candidate's fault: killing the empty
call's worker mid-timing once gave the submission a rejection (tasks.harness.link: no torch)."""

from __future__ import annotations

import time

import pytest

from kcoral.tasks.harness.channel import Channel, pair
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


@pytest.mark.parametrize(
    ("trusted", "stamp", "lagged"),
    [
        (True, -5_000_000, True),  # a trusted worker's answer sent 5 ms ago: the hand-off took >= 5 ms
        (False, -5_000_000, False),  # the candidate's stamp is its own word: never read
        (True, "5", False),
        (True, True, False),
        (True, None, False),
    ],
)
def test_only_a_trusted_workers_stamp_gives_the_hand_off_lag(trusted: bool, stamp: object, lagged: bool) -> None:
    ours, theirs = pair()
    worker = Worker("baseline" if trusted else "candidate", ours, trusted=trusted, timeout=5)
    at = time.monotonic_ns() + stamp if type(stamp) is int else stamp
    Channel(theirs).send({"ok": True, "at": at})
    assert worker.answer() is None
    assert (worker.answer_lag_ns >= 5_000_000) if lagged else worker.answer_lag_ns == 0
    ours.close()
    theirs.close()


def test_a_silent_worker_is_given_up_before_the_evaluations_deadline_not_after_its_call_timeout() -> None:
    """A call's own limit (300 s by default) may be longer than what is left of the evaluation: a silent
    candidate then used the whole job's time and the job ended without a report (CI at e133dcb). The
    wait ends at the deadline less its margin, and the case is the candidate's error."""
    ours, theirs = pair()  # the worker's end stays open and says nothing
    worker = Worker("candidate", ours, trusted=False, timeout=300, deadline=time.time() + 1.5, margin=1.0)
    began = time.monotonic()
    left = r"stopped answering: no answer within 0\.\d s, what was left of the evaluation's time limit"
    with pytest.raises(CandidateGone, match=left):
        worker.ask({"op": "call", "case": "c0"})
    assert time.monotonic() - began < 2.0
    with pytest.raises(CandidateGone):  # and at once every later time
        worker.answer()
    ours.close()
    theirs.close()
