"""Issue 29 on a loaded host: a process of the host's own (not a job) runs on the candidate's core while
the honest template of demo/softmax is evaluated. On a 2-core host the scheduler puts an unpinned busy
loop there by itself (the supervisor's core never sleeps while a case is timed); beside one, A/A requests
read 0.77-0.81x with intervals wholly below 1.0, the candidate slowed and the baseline not. Pinned here so
that it is certain: the evaluation must not score (inconclusive, naming the shared core), never a
number that holds the host's work against the submission.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest

from kcoral.tasks import evaluate as evaluation
from tests.attacks.judging import describe
from tests.conftest import RunningServer
from tests.integration.test_cotenant_storm import pool_on, report_of, submit_template, two_cores


@pytest.fixture
def busy_loop_on() -> Iterator[Callable[[int], None]]:
    started: list[subprocess.Popen[bytes]] = []

    def start(core: int) -> None:
        started.append(
            subprocess.Popen(
                [sys.executable, "-c", f"import os\nos.sched_setaffinity(0, {{{core}}})\nwhile True: pass"]
            )
        )

    yield start
    for proc in started:
        proc.kill()
        proc.wait()


def test_a_host_process_on_the_candidates_core_leaves_the_evaluation_unscored(
    server_factory: Callable[..., RunningServer],
    monkeypatch: pytest.MonkeyPatch,
    busy_loop_on: Callable[[int], None],
) -> None:
    pair = two_cores()
    candidate = evaluation.layout_of(pair).candidate_core
    assert candidate is not None
    pool_on(monkeypatch, list(pair))
    server = server_factory(cpu_slots=2)
    busy_loop_on(candidate)
    job = server.wait(submit_template(server), timeout=400)
    report = report_of(server, job["id"])
    print("a busy loop on the candidate's core:", describe(job, report))
    assert job["verdict"] == "inconclusive" and "summary" not in report, describe(job, report)
    shared = [why for why in report["inconclusive"] if "ran on the submission's core" in why]
    assert shared, describe(job, report)
    assert not report["flags"], describe(job, report)
