"""Job models: what the API shows of a job."""

from __future__ import annotations

from kcoral.runner.models import JobTimes, StepTimes


def test_phase_times_follow_the_job_through_its_containers() -> None:
    times = JobTimes(
        created=100.0,
        queued=100.5,
        started=103.0,
        finished=120.25,
        steps=[
            StepTimes(name="supervisor", started=103.5, ended=119.0),
            StepTimes(name="candidate", started=104.0, ended=118.5),
        ],
    )
    assert times.phases == {
        "upload": 0.5, "queue": 2.5, "start": 0.5, "supervisor": 15.5, "candidate": 14.5, "collect": 1.25,
    }  # fmt: skip
    assert JobTimes(created=1.0).phases == {} and JobTimes(created=1.0, queued=3.0).phases == {"upload": 2.0}
    assert "phases" in times.model_dump(mode="json")  # the API and --json carry them
