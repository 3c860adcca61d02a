"""Issue 29 from a co-tenant: the owner of an evaluation runs, in a ``kcoral python`` job of their own,
the interrupt storm of tests/attacks/candidates/irq_storm (one timerfd in ~90,000 epoll entries, firing
every few ms: each expiry stalls its core ~4 ms in interrupt context, which this kernel bills to
whatever runs there and not as interrupt time in /proc/stat) plus POSIX timer signals at 2 kHz, while
the honest template of demo/softmax is evaluated: were the storm's core the judge's, the baseline's
calls would stretch and the template would read faster than it is.

Where each CPU slot has one core (this 2-core host: tests.conftest's servers), an evaluation takes two
slots (runner.leases, tasks.harness.cores): every core the server has, so the two jobs never run at once
by design; the first test proves that (each waits for the other) and that the score is clean. The
second forces them together on a pool whose third slot is the judge's core again (fake, overlapping
slots: no server lays its slots out so) and asserts the evaluation gains nothing all the same.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kcoral.runner import services
from kcoral.runner.leases import LeasePool
from kcoral.tasks import evaluate as evaluation
from kcoral.tasks.harness import cores
from kcoral.tasks.registry import DEFAULT_TASKS_DIR
from tests.attacks.judging import HONEST_LIMIT, assert_honest, describe, no_score, speedup
from tests.conftest import RunningServer, make_tar

#: slow (~55 s: a storm beside each evaluation, which samples on), on a layout that changes seldom (a lease's
#: slots): scripts/test-nightly.sh runs it, not CI; test_cotenancy.py keeps an evaluation's cores apart from
#: a co-tenant's in CI
pytestmark = pytest.mark.nightly

STORM = Path(__file__).resolve().parents[1] / "attacks" / "candidates" / "irq_storm" / "storm.py"
TEMPLATE = DEFAULT_TASKS_DIR / "demo" / "softmax" / "template.py"
TASK = "demo/softmax"
#: the co-tenant: storm.py's fan-out fired on a timer (it cannot aim: the judge's counter is not in its
#: container), and the timer_signals candidate's signals, for argv[1] seconds
COTENANT = """
import os, signal, sys, threading, time
import storm

storm.POLLS.extend(storm.fan_out(storm.timer))
storm.set_timer(storm.timer, 3_000_000, 7_000_000)
ticks = [0]
def tick(signum, frame):
    ticks[0] += 1
signal.signal(signal.SIGALRM, tick)
signal.signal(signal.SIGPROF, tick)
signal.setitimer(signal.ITIMER_REAL, 0.0005, 0.0005)
stop = threading.Event()
def rearm():
    while not stop.is_set():
        signal.setitimer(signal.ITIMER_PROF, 0.0003)
        time.sleep(0.0005)
rearming = threading.Thread(target=rearm, daemon=True)
rearming.start()
print("COTENANT-STORMING cores", sorted(os.sched_getaffinity(0)), "entries", len(storm.POLLS) * 3000, flush=True)
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    time.sleep(2)
    print("COTENANT-TICKS", ticks[0], flush=True)
stop.set()
rearming.join()
signal.setitimer(signal.ITIMER_REAL, 0)
signal.setitimer(signal.ITIMER_PROF, 0)  # else a signal pending at exit finds no handler and kills it
"""


def two_cores() -> tuple[int, int]:
    mine = sorted(os.sched_getaffinity(0))
    if len(mine) < 2:
        pytest.skip("an evaluation needs two cores to keep the candidate off the judge's")
    return mine[0], mine[1]


def pool_on(monkeypatch: pytest.MonkeyPatch, slot_cores: list[int]) -> None:
    """Servers started from now on get one CPU slot per entry of ``slot_cores``, on that core."""
    monkeypatch.setattr(services, "LeasePool", functools.partial(LeasePool, cores=slot_cores))


def storm(server: RunningServer, seconds: float, wait_until_storming: bool = True) -> dict[str, Any]:
    job = server.submit({"cotenant.py": COTENANT, "storm.py": STORM.read_bytes()}, ["cotenant.py", str(seconds)])
    deadline = time.monotonic() + 60
    while wait_until_storming and "COTENANT-STORMING" not in server.log(job["id"]):
        assert time.monotonic() < deadline, f"the co-tenant never stormed: {server.log(job['id'])[-2000:]}"
        time.sleep(0.2)
    return job


def submit_template(server: RunningServer) -> str:
    r = server.http.post("/v1/jobs", json={"kind": "eval", "task": TASK, "timeout_s": 300})
    assert r.status_code == 201, r.text
    r = server.http.put(f"/v1/jobs/{r.json()['id']}/input", content=make_tar({"solution.py": TEMPLATE.read_bytes()}))
    assert r.status_code == 200, r.text
    return str(r.json()["id"])


def report_of(server: RunningServer, job_id: str) -> dict[str, Any]:
    r = server.http.get(f"/v1/jobs/{job_id}/outputs/report.json")
    assert r.status_code == 200, f"no report: {server.log(job_id)[-3000:]}"
    return dict(r.json())


def wait_running(server: RunningServer, job_id: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while server.http.get(f"/v1/jobs/{job_id}").json()["state"] != "running":
        assert time.monotonic() < deadline, f"job {job_id} never ran"
        time.sleep(0.1)


def outcome(job: dict[str, Any], report: dict[str, Any]) -> str:
    s = (report.get("summary") or {}).get("speedup_lo"), (report.get("summary") or {}).get("speedup_hi")
    took = job["times"]["finished"] - job["times"]["started"]
    return f"verdict={job['verdict']} speedup={speedup(report)} interval={s} in {took:.0f} s"


def test_a_storming_co_tenant_and_an_evaluation_wait_for_each_other_here(
    server_factory: Callable[..., RunningServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two one-core slots: the evaluation takes both, so it waits for the storming co-tenant, and a
    co-tenant submitted while it runs waits for it; the template's score is clean: nothing flagged,
    and an honest speedup, or none where the host is busy with others' work (a shared CI host: the
    judge then finds most iterations disturbed, with a storm before it or without)."""
    pool_on(monkeypatch, list(two_cores()))
    server = server_factory(cpu_slots=2)
    before = storm(server, 4)  # long enough for the evaluation to be queued behind it (it is, in well under 1 s)
    eval_id = submit_template(server)
    wait_running(server, eval_id)
    after = storm(server, 1, wait_until_storming=False)
    job = server.wait(eval_id, timeout=400)
    report = report_of(server, eval_id)
    before, after = server.wait(before["id"], timeout=60), server.wait(after["id"], timeout=120)
    print("co-tenant storm, by design:", outcome(job, report))
    assert before["verdict"] == after["verdict"] == "ok" and before["owner"] == job["owner"], (before, after, job)
    assert "COTENANT-TICKS" in server.log(before["id"]) and "COTENANT-STORMING" in server.log(after["id"])
    assert job["slot"] == "cpu0,cpu1", job
    assert before["times"]["finished"] <= job["times"]["started"], (before["times"], job["times"])
    assert job["times"]["finished"] <= after["times"]["started"], (job["times"], after["times"])
    assert not report["flags"] and job["verdict"] in ("ok", "inconclusive"), describe(job, report)
    if job["verdict"] == "ok":
        assert_honest(job, report)


def test_a_co_tenant_storming_the_judges_core_gains_nothing(
    server_factory: Callable[..., RunningServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Forced together: slots cpu0 and cpu2 share the core the judge will take (the quietest, as the
    server ranks them), the co-tenant storms on cpu0 and the evaluation gets cpu1 and cpu2. It must
    not score a gain: no score, or a speedup under the honest limit whose interval is not wholly
    above 1.0."""
    pair = two_cores()
    layout_of = evaluation.layout_of  # a lease's layout, the same for the process's life once made
    judge = layout_of(pair).supervisor
    other = pair[1] if judge == pair[0] else pair[0]
    layouts: list[cores.CoreLayout] = []

    def seen(lease_cores: tuple[int, ...]) -> cores.CoreLayout:
        layouts.append(layout_of(lease_cores))
        return layouts[-1]

    monkeypatch.setattr(evaluation, "layout_of", seen)
    pool_on(monkeypatch, [judge, other, judge])
    server = server_factory(cpu_slots=3)
    cotenant = storm(server, 600)
    assert f"cores [{judge}]" in server.log(cotenant["id"])
    job = server.wait(submit_template(server), timeout=400)
    report = report_of(server, job["id"])
    running = server.http.get(f"/v1/jobs/{cotenant['id']}").json()
    server.http.post(f"/v1/jobs/{cotenant['id']}/cancel")
    print("co-tenant storm on the judge's core:", outcome(job, report), describe(job, report))
    assert running["state"] == "running" and running["owner"] == job["owner"], running
    assert job["slot"] == "cpu1,cpu2" and [x.judge for x in layouts] == [{judge}], (job["slot"], layouts)
    s, lo = speedup(report), (report.get("summary") or {}).get("speedup_lo")
    gained = s is not None and (s >= HONEST_LIMIT or (lo is not None and lo > 1.0))
    assert no_score(job) or not gained, describe(job, report)
