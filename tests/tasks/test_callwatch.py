"""tasks.harness.callwatch on counters of our own: what a window around each call keeps (the candidate's
gaps, others' work on its core, the trusted side's waits), and for whom."""

from __future__ import annotations

from kcoral.tasks.harness.callwatch import CallWatch
from kcoral.tasks.harness.cores import CoreLayout


class Counters:
    """The candidate container's CPU (ns), its core's busy ms, the trusted processes' waits: moved by
    the test; and a clock in ns."""

    def __init__(self) -> None:
        self.cpu_ns = 0
        self.core_ms = 0.0
        self.waits: dict[str, float] = {}
        self.now = 0

    def ns(self) -> int:
        return self.cpu_ns

    def waited_ms(self, names: list[str]) -> float:
        return sum(self.waits.get(n, 0.0) for n in names)

    def busy_ms(self, core: int) -> float:
        return self.core_ms

    def irq_ms(self) -> float:
        return 0.0

    def lost_ms(self) -> dict[int, float]:
        return {}


SEPARATED = CoreLayout(supervisor=0, workers=1, candidate=(2,))


def watch(layout: CoreLayout = SEPARATED) -> tuple[CallWatch, Counters]:
    c = Counters()
    return CallWatch(layout, judge=c, watch=c, clock=lambda: c.now), c


def test_a_candidate_call_keeps_its_gap_and_what_it_used_while_its_inputs_were_written() -> None:
    w, c = watch()
    c.cpu_ns = 1_000
    w.settled()
    c.cpu_ns = 4_000  # 3 us between its previous call and this one's window
    window = w.open(candidate=True)
    c.cpu_ns = 4_500  # 0.5 us while its inputs were written
    w.written(window)
    c.cpu_ns, c.now = 9_000, c.now + 6_000  # its call: 4.5 us of CPU in 6 us
    w.close(window)
    assert w.gaps == [(3_000, 500)] and w.last_cpu == 9_000


def test_cpu_the_counter_shows_in_a_one_core_candidates_call_beyond_its_wall_time_was_early_work() -> None:
    """The container's counter moves only at the scheduler's ticks and switches: a forked helper that works
    while the inputs are written, and is switched out only when the call's worker takes the core, shows
    ~0.03 ms there and its work later, inside the call (a red-team pass: 1.07-1.15x, unflagged). One core
    cannot run more than the call's wall time: the rest is early work. Several cores can."""
    w, c = watch()
    w.settled()
    window = w.open(candidate=True)
    c.cpu_ns = 30_000  # 0.03 ms seen while the inputs were written
    w.written(window)
    c.cpu_ns, c.now = 30_000 + 1_500_000, c.now + 400_000  # 1.5 ms counted in a call answered in 0.4 ms
    w.answered(window)
    c.now += 2_000_000  # the outputs copied: the worker had answered, its counter could not move for this
    w.close(window)
    assert w.gaps == [(0, 30_000 + 1_100_000)]
    wide, c = watch(CoreLayout(supervisor=0, workers=1, candidate=(2, 3)))
    wide.settled()
    window = wide.open(candidate=True)
    wide.written(window)
    c.cpu_ns, c.now = 1_500_000, c.now + 400_000  # two cores: 1.5 ms of CPU in 0.4 ms may be its call's
    wide.close(window)
    assert wide.gaps == [(0, 0)]


def test_a_trusted_call_keeps_no_gap_and_leaves_the_candidates_last_reading() -> None:
    w, c = watch()
    c.cpu_ns = 2_000
    w.settled()
    c.cpu_ns = 5_000
    window = w.open(candidate=False)
    w.written(window)
    w.close(window)
    assert w.gaps == [] and w.shared == [] and w.last_cpu == 2_000


def test_others_work_on_the_candidates_core_is_its_busy_time_less_the_candidates_own() -> None:
    w, c = watch()
    window = w.open(candidate=True)
    c.now, c.core_ms, c.cpu_ns = 10_000_000, 7.0, 4_000_000  # 10 ms window, core busy 7 ms, 4 of them its own
    w.close(window)
    assert w.shared == [(3.0, 10.0)]


def test_the_keeper_of_the_candidates_core_is_not_others_work_there() -> None:
    """tasks.harness.keeper: trusted, it spins there while the supervisor writes the call's inputs."""
    w, c = watch()
    kept = [100.0]
    w.kept = lambda: kept[0]
    window = w.open(candidate=True)
    c.now, c.core_ms, c.cpu_ns, kept[0] = 10_000_000, 7.0, 4_000_000, 102.5  # 2.5 of the 7 ms its keeper's
    w.close(window)
    assert w.shared == [(0.5, 10.0)]


def test_where_the_kernel_says_how_long_the_candidate_was_held_up_that_is_others_work_not_the_ticks() -> None:
    """tasks.harness.cpuwatch.HeldWatch: the core's busy time in clock ticks is noise around a GPU call that
    waits (19 ms over 38 batches of an idle H100 host); the stall totals are what took the core from it."""
    w, c = watch()
    held = Held()
    w.held = held
    window = w.open(candidate=True)
    c.now, c.core_ms, c.cpu_ns, held.at = 10_000_000, 7.0, 4_000_000, 1_250_000  # the ticks say 3 ms, held 1.25
    w.close(window)
    window = w.open(candidate=True)
    c.now += 5_000_000  # held up no more
    w.close(window)
    assert w.shared == [(1.25, 10.0), (0.0, 5.0)]


class Held:
    def __init__(self) -> None:
        self.at = 0

    def ns(self) -> int:
        return self.at


def test_no_core_of_its_own_or_no_judge_watch_keeps_no_shared_figure() -> None:
    for layout in (CoreLayout(None, None, ()), CoreLayout(0, 0, ())):
        w, c = watch(layout)
        window = w.open(candidate=True)
        c.core_ms = 5.0
        w.close(window)
        assert w.shared == [] and len(w.gaps) == 1
    bare = CallWatch(SEPARATED)  # no counters at all: nothing read, nothing kept but the gaps' zeros
    window = bare.open(candidate=True)
    bare.close(window)
    assert bare.shared == [] and bare.gaps == [(0, 0)] and bare.waited == 0.0


def test_the_waits_counted_are_those_of_the_watched_from_judging_on() -> None:
    w, c = watch()
    window = w.open(candidate=False)
    c.waits = {"baseline": 1.0, "supervisor": 2.0}  # before the clock: not the call's
    w.judging(window, w.watched(trusted=True, name="baseline"))
    c.waits = {"baseline": 1.5, "supervisor": 2.25, "null": 9.0}
    w.close(window)
    assert w.waited == 0.75


def test_who_is_watched_during_a_call() -> None:
    """The trusted worker itself and the supervisor; not the supervisor where it shares that worker's core
    (it waits its turn there by design); for the candidate's call, the supervisor alone."""
    apart, _ = watch(SEPARATED)
    assert apart.watched(trusted=True, name="baseline") == ["baseline", "supervisor"]
    assert apart.watched(trusted=False, name="candidate") == ["supervisor"]
    together, _ = watch(CoreLayout(supervisor=0, workers=0, candidate=(1,)))
    assert together.watched(trusted=True, name="baseline") == ["baseline"]
    assert together.watched(trusted=False, name="candidate") == ["supervisor"]


def test_measuring_starts_the_kept_figures_afresh() -> None:
    w, c = watch()
    window = w.open(candidate=True)
    w.close(window)
    assert w.gaps
    w.measuring()
    assert w.gaps == [] and w.shared == []
