"""tasks.harness.cpuwatch: the candidate container's CPU counter, found from the folder name the
server wrote (never from what the candidate says), read in nanoseconds on cgroup v2 and v1."""

from __future__ import annotations

from pathlib import Path

import pytest

from kcoral.tasks.harness import cpuwatch
from kcoral.tasks.harness.cpuwatch import MOUNT, CpuWatch, for_leaf, held_for_leaf


def test_cgroup_v2_reads_usage_usec_from_cpu_stat_in_nanoseconds(tmp_path: Path) -> None:
    (tmp_path / "docker-abc.scope").mkdir()
    stat = tmp_path / "docker-abc.scope" / "cpu.stat"
    stat.write_text("usage_usec_extra 9\nusage_usec 1234\nuser_usec 1000\nsystem_usec 234\n")
    watch = for_leaf("docker-abc.scope", "2", tmp_path)
    assert watch.counter == stat
    assert watch.ns() == 1_234_000 and isinstance(watch.ns(), int)
    stat.write_text("usage_usec 1235\n")  # read afresh each time
    assert watch.ns() == 1_235_000


def test_a_container_that_has_exited_used_what_it_had_used(tmp_path: Path) -> None:
    """Its cgroup is removed once every process of it has exited: the reading stays the last one (an
    exited candidate's clean-up, a drop of its buffers, must not end the judge with FileNotFoundError); a
    counter that was never there is still an error."""
    (tmp_path / "gone").mkdir()
    (tmp_path / "gone" / "cpuacct.usage").write_text("5000\n")
    watch = for_leaf("gone", "1", tmp_path)
    assert watch.ns() == 5000
    (tmp_path / "gone" / "cpuacct.usage").unlink()
    assert watch.ns() == 5000
    with pytest.raises(FileNotFoundError):  # a counter never seen: the watch watches nothing (session says so)
        for_leaf("never", "1", tmp_path).ns()


def test_cgroup_v2_without_usage_usec_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "cpu.stat").write_text("user_usec 5\nusage_usecs 7\n")
    with pytest.raises(ValueError, match=r"^\S+/x/cpu\.stat has no usage_usec$"):
        for_leaf("x", "2", tmp_path).ns()


def test_cgroup_v1_reads_cpuacct_usage_in_nanoseconds(tmp_path: Path) -> None:
    (tmp_path / "0123abcd").mkdir()
    (tmp_path / "0123abcd" / "cpuacct.usage").write_text("987654321\n")
    watch = for_leaf("0123abcd", "1", tmp_path)
    assert watch.counter == tmp_path / "0123abcd" / "cpuacct.usage"
    assert watch.ns() == 987_654_321 and isinstance(watch.ns(), int)


def test_a_counter_of_no_known_format_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "c").write_text("5\n")
    with pytest.raises(ValueError, match=r"^no reader for 'usec'$"):
        CpuWatch(tmp_path / "c", 1, "usec").ns()


def test_the_default_mount_is_the_servers() -> None:
    """tasks.evaluate mounts the host's container cgroups at this path in the judge's container."""
    assert Path("/kcoral-cgroups") == MOUNT
    assert for_leaf("docker-1.scope", "2").counter == MOUNT / "docker-1.scope" / "cpu.stat"


@pytest.mark.parametrize("leaf", ["", ".", "..", "../x", "a/b", "x\n", "a b", "x" * 256, "/etc"])
def test_a_folder_name_that_could_leave_the_mount_is_refused(leaf: str) -> None:
    with pytest.raises(ValueError, match=r"^unexpected cgroup folder '.*'$"):
        for_leaf(leaf, "2")


def test_the_longest_plain_name_is_taken() -> None:
    assert for_leaf("a" * 255, "1").counter.name == "cpuacct.usage"


@pytest.mark.parametrize("version", ["0", "3", "", "v2"])
def test_an_unknown_cgroup_version_is_refused(version: str) -> None:
    with pytest.raises(ValueError, match=f"^no cgroup v{version} CPU accounting$"):
        for_leaf("leaf", version)


def _pressure(some: int | None, full: int) -> str:
    line = "{} avg10=0.00 avg60=0.12 avg300=0.05 total={}\n"
    return (line.format("some", some) if some is not None else "") + line.format("full", full)


def test_held_up_is_the_full_cpu_and_irq_stall_totals_of_the_containers_cgroup_in_ns(tmp_path: Path) -> None:
    """``some`` (one of the candidate's processes waiting while another of its own runs) is not held up by
    anyone: only ``full`` counts, of CPU and IRQ, read afresh each time."""
    leaf = tmp_path / "docker-abc.scope"
    leaf.mkdir()
    (leaf / "cpu.pressure").write_text(_pressure(900_000, 1_500))
    (leaf / "irq.pressure").write_text(_pressure(None, 250))
    held = held_for_leaf("docker-abc.scope", "2", tmp_path)
    assert held is not None and held.ns() == 1_750_000
    (leaf / "irq.pressure").write_text(_pressure(None, 300))
    assert held.ns() == 1_800_000


def test_a_kernel_without_the_irq_figure_holds_cpu_alone_and_one_without_cpus_none(tmp_path: Path) -> None:
    leaf = tmp_path / "c"
    leaf.mkdir()
    (leaf / "cpu.pressure").write_text(_pressure(10, 20))
    held = held_for_leaf("c", "2", tmp_path)
    assert held is not None and held.files == [leaf / "cpu.pressure"] and held.ns() == 20_000
    (leaf / "cpu.pressure").write_text("some avg10=0.00 avg60=0.00 avg300=0.00 total=10\n")  # before 5.13: no full
    assert held_for_leaf("c", "2", tmp_path) is None
    (leaf / "cpu.pressure").unlink()  # no PSI at all
    assert held_for_leaf("c", "2", tmp_path) is None
    assert held_for_leaf("c", "1", tmp_path) is None  # cgroup v1 keeps none
    with pytest.raises(ValueError, match=r"^unexpected cgroup folder '\.\.'$"):
        held_for_leaf("..", "2", tmp_path)


def test_held_up_keeps_its_last_reading_once_the_cgroup_is_gone_or_reads_as_nonsense(tmp_path: Path) -> None:
    leaf = tmp_path / "gone"
    leaf.mkdir()
    (leaf / "cpu.pressure").write_text(_pressure(1, 7))
    held = held_for_leaf("gone", "2", tmp_path)
    assert held is not None and held.ns() == 7_000
    (leaf / "cpu.pressure").write_text("full total=x\n")
    assert held.ns() == 7_000
    (leaf / "cpu.pressure").unlink()
    assert held.ns() == 7_000


def test_cpu_outside_calls_is_each_gaps_median_and_its_total_over_the_baselines_time() -> None:
    gaps = [(1_000_000, 0), (3_000_000, 500_000), (2_000_000, 0)]  # ns between calls, ns before a call began
    figures = cpuwatch.outside_calls(gaps, baseline_ms=60.0)
    assert figures == {"idle_cpu_ms": 2.0, "idle_cpu_share": 0.1, "early_cpu_ms": 0.0, "early_cpu_share": 0.5 / 60}
    assert cpuwatch.outside_calls([], 0.0) == dict.fromkeys(figures, 0.0)


@pytest.mark.parametrize(
    ("figures", "flagged"),
    [
        ({"idle_cpu_ms": 0.5, "idle_cpu_share": 0.01, "early_cpu_ms": 0.5, "early_cpu_share": 0.01}, []),
        ({"idle_cpu_ms": 0.51, "idle_cpu_share": 0.0, "early_cpu_ms": 0.0, "early_cpu_share": 0.0}, ["between"]),
        ({"idle_cpu_ms": 0.0, "idle_cpu_share": 0.06, "early_cpu_ms": 0.0, "early_cpu_share": 0.0}, ["between"]),
        ({"idle_cpu_ms": 0.0, "idle_cpu_share": 0.0, "early_cpu_ms": 0.6, "early_cpu_share": 0.0}, ["before"]),
        (
            {"idle_cpu_ms": 1.0, "idle_cpu_share": 0.0, "early_cpu_ms": 0.0, "early_cpu_share": 0.2},
            ["between", "before"],
        ),
    ],
)
def test_cpu_outside_calls_is_flagged_past_either_limit(figures: dict[str, float], flagged: list[str]) -> None:
    """Limits 0.5 ms per gap (median) and 5% of the baseline's time (total): at a limit is not over it."""
    flags = cpuwatch.outside_flags("w", figures, 0.5, 0.05)
    assert [("between" if "between its calls" in f else "before") for f in flags] == flagged
    assert all(f.startswith("w: the candidate's processes used CPU") for f in flags)


def test_a_shared_core_is_others_work_over_the_calls_time_never_below_zero() -> None:
    assert cpuwatch.shared_core([(10.0, 100.0), (-5.0, 100.0), (25.0, 50.0)]) == (30.0, 0.12)
    # the core's ticks are 10 ms: a short window may show less than the candidate's own time
    assert cpuwatch.shared_core([(-10.0, 20.0)]) == (0.0, 0.0)
    assert cpuwatch.shared_core([]) == (0.0, 0.0)


def test_shares_are_of_the_baselines_real_time_even_under_a_millisecond() -> None:
    """A fast workload's baseline can total well under 1 ms over its calls: the candidate's CPU use
    outside its calls is a share of that time (the 1e-9 floor only guards a zero)."""
    figures = cpuwatch.outside_calls([(100_000, 50_000)], 0.5)  # 0.1 ms between calls, 0.05 ms before
    assert figures == {
        "idle_cpu_ms": 0.1,
        "idle_cpu_share": pytest.approx(0.2),
        "early_cpu_ms": 0.05,
        "early_cpu_share": pytest.approx(0.1),
    }
    assert cpuwatch.shared_core([(0.1, 0.25), (0.0, 0.25)]) == (0.1, pytest.approx(0.2))


def test_use_exactly_at_the_limits_is_not_flagged() -> None:
    """The flags are for a median *above* limit_ms or a total *above* the share; at them, none."""
    at = {"idle_cpu_ms": 0.5, "idle_cpu_share": 0.1, "early_cpu_ms": 0.5, "early_cpu_share": 0.1}
    assert cpuwatch.outside_flags("w", at, 0.5, 0.1) == []
    for key in at:
        over = {**at, key: at[key] * 1.01}
        assert len(cpuwatch.outside_flags("w", over, 0.5, 0.1)) == 1, key


@pytest.mark.parametrize(
    ("ms", "share", "over"),
    [(134.0, 0.464, True), (91.0, 0.474, None), (100.0, 0.11, True), (500.0, 0.10, False), (0.0, 0.0, False)],
)
def test_others_work_on_the_core_is_over_under_or_undecided(ms: float, share: float, over: bool | None) -> None:
    """Over the share (10%) in at least 100 ms: not scored; over the share in fewer: undecided (a realtime
    host loop read 47% in 91 ms after 20 iterations, and the measurement must sample on); at or under it:
    clear, however many ms."""
    assert cpuwatch.shared_core_over(ms, share, 0.1, 100.0) is over
