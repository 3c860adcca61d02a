"""Issue 29 on a loaded host: a process of the host's own (not a job) runs on the candidate's core while
the honest template of demo/softmax is evaluated. On a 2-core host the scheduler puts an unpinned busy
loop there by itself (the supervisor's core never sleeps while a case is timed); beside one, A/A requests
read 0.77-0.81x with intervals wholly below 1.0, the candidate slowed and the baseline not. The loops
are pinned here so that it is certain.

The job containers' parent cgroup has the largest CPU weight (runner.jobcgroup): an ordinary host
process yields the leased core and the evaluation scores as on an idle host. What the weight cannot
hold back (a real-time process) must leave the evaluation unscored, naming the shared core: never a
number that holds the host's work against the submission.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kcoral.tasks import evaluate as evaluation
from tests.attacks.judging import assert_honest, describe
from tests.conftest import RunningServer
from tests.integration.test_cotenant_storm import pool_on, report_of, submit_template, two_cores

#: a host process pinned to a core: "busy" spins all the time at the default priority; "realtime" spins
#: 2 ms of every 4 at SCHED_FIFO, which no CPU weight holds back
LOOPS = {
    "busy": "while True: pass",
    "realtime": (
        "import time\nos.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))\n"
        "while True:\n    end = time.perf_counter() + 0.002\n    while time.perf_counter() < end: pass\n"
        "    time.sleep(0.002)"
    ),
}


@pytest.fixture
def host_loop_on() -> Iterator[Callable[[int, str], None]]:
    started: list[subprocess.Popen[bytes]] = []

    def start(core: int, kind: str) -> None:
        code = f"import os\nos.sched_setaffinity(0, {{{core}}})\n{LOOPS[kind]}"
        proc = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE)
        started.append(proc)
        time.sleep(0.3)
        assert proc.poll() is None, (proc.stderr.read() if proc.stderr else b"").decode()
        if kind == "realtime":
            assert os.sched_getscheduler(proc.pid) == os.SCHED_FIFO

    yield start
    for proc in started:
        proc.kill()
        proc.communicate()


def evaluate_beside(
    kind: str,
    server_factory: Callable[..., RunningServer],
    monkeypatch: pytest.MonkeyPatch,
    loop_on: Callable[[int, str], None],
) -> tuple[RunningServer, dict[str, Any], dict[str, Any]]:
    pair = two_cores()
    candidate = evaluation.layout_of(pair).candidate_core
    assert candidate is not None
    pool_on(monkeypatch, list(pair))
    server = server_factory(cpu_slots=2)
    loop_on(candidate, kind)
    job = server.wait(submit_template(server), timeout=400)
    report = report_of(server, job["id"])
    print(f"a {kind} host loop on the candidate's core:", describe(job, report))
    return server, job, report


def test_a_host_process_yields_the_candidates_core_and_the_evaluation_scores(
    server_factory: Callable[..., RunningServer],
    monkeypatch: pytest.MonkeyPatch,
    host_loop_on: Callable[[int, str], None],
) -> None:
    server, job, report = evaluate_beside("busy", server_factory, monkeypatch, host_loop_on)
    engine = server.http.get("/v1/health").json()["docker"]
    assert engine["job_cpu_weight"], engine["job_cgroup"]
    assert_honest(job, report)
    assert report["summary"]["speedup_lo"] <= 1.0, describe(job, report)  # never a gain for the template
    assert not any("ran on the submission's core" in why for why in report.get("inconclusive", []))


def test_a_realtime_host_process_on_the_candidates_core_leaves_the_evaluation_unscored(
    server_factory: Callable[..., RunningServer],
    monkeypatch: pytest.MonkeyPatch,
    host_loop_on: Callable[[int, str], None],
) -> None:
    _, job, report = evaluate_beside("realtime", server_factory, monkeypatch, host_loop_on)
    assert job["verdict"] == "inconclusive" and "summary" not in report, describe(job, report)
    shared = [why for why in report["inconclusive"] if "ran on the submission's core" in why]
    assert shared, describe(job, report)
    assert not report["flags"], describe(job, report)
