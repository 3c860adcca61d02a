"""tasks.harness.cores: who runs on which core of an evaluation's lease while a case is timed."""

from __future__ import annotations

import pytest

from kcoral.tasks.harness import cores
from kcoral.tasks.harness.cores import CoreLayout


@pytest.mark.parametrize(
    ("lease", "supervisor", "workers", "candidate", "trusted"),
    [
        ((4, 2, 3, 5, 6), 2, 3, 4, (2, 3, 5, 6)),  # a GPU slot of five: one core for the candidate
        ((0, 1, 2), 0, 1, 2, (0, 1)),
        ((1, 0), 0, 0, 1, (0,)),  # two: the judge's processes share the first
    ],
)
def test_the_candidate_gets_one_core_the_judge_never_uses(
    lease: tuple[int, ...], supervisor: int, workers: int, candidate: int, trusted: tuple[int, ...]
) -> None:
    layout = cores.split(lease)
    assert (layout.supervisor, layout.workers, layout.candidate, layout.trusted) == (
        supervisor, workers, (candidate,), trusted
    )  # fmt: skip
    assert layout.separated and not set(layout.trusted) & set(layout.candidate)
    assert layout.candidate_core == candidate
    # only where the judge's workers share the supervisor's core do the candidate's calls alone cross cores
    assert layout.only_candidate_crosses is (len(lease) == 2)
    wired = cores.parse(layout.wire())
    assert (wired.supervisor, wired.workers, wired.candidate) == (supervisor, workers, (candidate,))
    # a keeper on every timed worker's core but the supervisor's; the container holds its processes' and those
    assert wired.kept == tuple(c for c in (workers, candidate) if c != supervisor)
    assert layout.container == tuple(sorted({*trusted, candidate}))


def test_a_lease_that_cannot_be_split_keeps_no_core() -> None:
    assert cores.split((3,)).kept == () and cores.parse("-").kept == ()


@pytest.mark.parametrize("lease", [(), (3,)])
def test_a_lease_that_cannot_be_split_says_so(lease: tuple[int, ...]) -> None:
    layout = cores.split(lease)
    assert not layout.separated and layout.candidate_core is None and layout.wire() == "-"
    assert not layout.only_candidate_crosses
    assert not cores.parse("-").separated


@pytest.mark.parametrize("text", ["0:1:1", "0:0:0", "0:1:2,3", "x:1:2", "0:1", ""])
def test_a_layout_that_shares_a_judge_core_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        cores.parse(text)


def test_the_wire_form_names_every_core() -> None:
    assert CoreLayout(0, 1, (2,), (0, 1, 3)).wire() == "0:1:2"


STAT = """cpu  100 0 0 900 0 0 0 0 0 0
cpu0 50 0 0 350 0 40 60 0 0 0
cpu1 40 0 0 460 0 0 0 0 0 0
cpu2 30 0 0 468 0 0 0 2 0 0
cpu3 20 0 0 440 0 10 0 30 0 0
cpu4 10 0 0 400 90 0 0 0 0 0
intr 1 2 3
"""


def test_lost_shares_are_irq_softirq_and_steal_over_all_time() -> None:
    shares = cores.lost_shares(STAT)
    assert shares == pytest.approx({0: 0.2, 1: 0.0, 2: 0.004, 3: 0.08, 4: 0.0})  # iowait is idle, not taken
    assert cores.lost_shares("cpu0 0 0 0 0 0 0 0 0\ncpuX 1 2\nbogus") == {}


def test_the_judge_and_the_candidate_get_the_quietest_cores() -> None:
    """Core 0 serves the host's interrupts (as on the H200 host): the judge goes to the quietest cores,
    the candidate to the next; cores within one NOISE_STEP rank by number (1 and 2 here)."""
    layout = cores.split((0, 1, 2, 3), cores.lost_shares(STAT))
    assert (layout.supervisor, layout.workers, layout.candidate) == (1, 2, (3,))
    assert set(layout.trusted) == {0, 1, 2}
    two = cores.split((0, 1), cores.lost_shares(STAT))
    assert (two.supervisor, two.workers, two.candidate) == (1, 1, (0,))


def test_core_ticks_split_lost_busy_and_all() -> None:
    """Busy is user, nice and system (processes, anyone's); lost is irq, softirq and steal; iowait is idle."""
    ticks = cores.cpu_ticks("cpu0 5 1 2 100 7 3 4 6 9 9\ncpu1 1 2 3 4 5 6 7 8\n")
    assert ticks[0] == cores.CoreTicks(lost=13, busy=8, total=128)  # the 9s past steal are guest time, in user
    assert ticks[1] == (21, 6, 36)
