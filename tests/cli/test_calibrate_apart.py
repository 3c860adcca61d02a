"""``kcoral calibrate --apart S``: the A/A requests asked for one at a time, each once the one before
has ended and S seconds have passed (a floor from one window of the host's time misses noise that
changes over minutes); without it, all at once. The order of the client's calls, on a client of our own."""

from __future__ import annotations

from typing import Any

from kcoral.cli.commands.calibrate_cmd import ask
from kcoral.protocol.models import CalibrationJobs, EvalSpec, JobState, JobTimes, JobView, Verdict


class Client:
    """Records each call as it comes: what kcoral calibrate asks of a server, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.queued = 0

    def calibrate(self, task: str, requests: int) -> CalibrationJobs:
        jobs = [f"j{self.queued + k}" for k in range(requests)]
        self.queued += requests
        self.calls.append(("calibrate", task, requests))
        return CalibrationJobs(jobs=jobs, slot_note="one slot")

    def slept(self, seconds: float) -> None:
        self.calls.append(("sleep", seconds))

    def wait(self, job_id: str, on_change: Any = None) -> JobView:
        self.calls.append(("wait", job_id))
        return JobView(
            id=job_id,
            owner="o",
            state=JobState.finished,
            verdict=Verdict.ok,
            spec=EvalSpec(task="demo/softmax"),
            times=JobTimes(created=0.0),
        )


def test_apart_asks_for_each_request_once_the_last_has_ended_and_the_time_has_passed() -> None:
    client = Client()
    note, done = ask(client, "demo/softmax", 3, 90.0, quiet=True, sleep=client.slept)  # type: ignore[arg-type]
    assert (
        note == "one slot" and [r.view.id for r in done] == ["j0", "j1", "j2"] and [r.number for r in done] == [1, 2, 3]
    )
    assert client.calls == [
        ("calibrate", "demo/softmax", 1),
        ("wait", "j0"),
        ("sleep", 90.0),
        ("calibrate", "demo/softmax", 1),
        ("wait", "j1"),
        ("sleep", 90.0),
        ("calibrate", "demo/softmax", 1),
        ("wait", "j2"),
    ]


def test_without_apart_every_request_is_queued_at_once() -> None:
    client = Client()
    _, done = ask(client, "demo/softmax", 3, 0.0, quiet=True, sleep=client.slept)  # type: ignore[arg-type]
    assert client.calls == [("calibrate", "demo/softmax", 3), ("wait", "j0"), ("wait", "j1"), ("wait", "j2")]
    assert [r.ok for r in done] == [True, True, True]
