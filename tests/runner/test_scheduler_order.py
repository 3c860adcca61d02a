"""Pure logic: the fair order of the queue."""

from kcoral.protocol.models import JobState, JobTimes, PythonSpec
from kcoral.runner.scheduler import fair_order
from kcoral.runner.store import JobRecord


def _job(job_id: str, owner: str, state: JobState = JobState.queued) -> JobRecord:
    return JobRecord(id=job_id, owner=owner, state=state, spec=PythonSpec(argv=["m.py"]), times=JobTimes(created=0))


def test_round_robin_across_owners_fifo_within():
    queued = [_job("a1", "a"), _job("a2", "a"), _job("a3", "a"), _job("b1", "b"), _job("c1", "c"), _job("b2", "b")]
    assert [j.id for j in fair_order(queued, [])] == ["a1", "b1", "c1", "a2", "b2", "a3"]


def test_owners_with_running_jobs_go_after_idle_owners():
    queued = [_job("a1", "a"), _job("b1", "b")]
    running = [_job("a0", "a", JobState.running)]
    assert [j.id for j in fair_order(queued, running)] == ["b1", "a1"]


def test_empty_queue():
    assert fair_order([], []) == []


def test_owners_served_longest_ago_go_first():
    queued = [_job("a2", "a"), _job("b1", "b"), _job("c1", "c")]
    assert [j.id for j in fair_order(queued, [], {"a": 20.0, "b": 10.0})] == ["c1", "b1", "a2"]


def test_running_jobs_weigh_before_the_last_start():
    queued = [_job("a2", "a"), _job("b2", "b")]
    running = [_job("b1", "b", JobState.running)]
    assert [j.id for j in fair_order(queued, running, {"a": 20.0, "b": 10.0})] == ["a2", "b2"]
