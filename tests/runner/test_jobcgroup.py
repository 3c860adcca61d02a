"""runner.jobcgroup on a folder laid out like /sys/fs/cgroup (v1's cpu hierarchy, v2's root): the job
containers' parent is made and given the largest CPU weight, or the engine's default is kept and the
reason says why. The real engine's side (containers under the parent, host work yielding the leased
cores) is tests/integration/test_loaded_host.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from kcoral.runner.jobcgroup import V1_SHARES_MAX, V2_WEIGHT_MAX, prepare, pressure_stalls


def v2_root(tmp_path: Path, controllers: str = "cpuset cpu io memory pids", subtree: str = "") -> Path:
    (tmp_path / "cgroup.controllers").write_text(controllers + "\n")
    (tmp_path / "cgroup.subtree_control").write_text(subtree + "\n")
    return tmp_path


@pytest.mark.parametrize("hierarchy", ["cpu", "cpu,cpuacct", "cpuacct,cpu"])
def test_cgroup_v1_gets_the_largest_cpu_shares_in_its_cpu_hierarchy(tmp_path: Path, hierarchy: str) -> None:
    (tmp_path / hierarchy).mkdir()
    got = prepare("kcoral", "1", "cgroupfs", tmp_path)
    assert (got.parent, got.weight, got.reason) == ("/kcoral", "cpu.shares 262144", "")  # the kernel's largest
    assert (tmp_path / hierarchy / "kcoral" / "cpu.shares").read_text() == str(V1_SHARES_MAX)
    assert "yield the leased cores" in got.describe()
    assert prepare("kcoral", "1", "cgroupfs", tmp_path) == got  # a restarted server finds its folder there


def test_cgroup_v1_without_a_cpu_hierarchy_keeps_the_default(tmp_path: Path) -> None:
    got = prepare("kcoral", "1", "cgroupfs", tmp_path)
    assert got.parent == "" and got.reason.startswith(f"cannot set {tmp_path}/cpu/kcoral/cpu.shares: ")


def test_cgroup_v2_gets_the_largest_cpu_weight_and_the_cpu_controller_for_its_children(tmp_path: Path) -> None:
    root = v2_root(tmp_path)
    got = prepare("kc", "2", "cgroupfs", root)
    assert (got.parent, got.weight) == ("/kc", "cpu.weight 10000")  # the kernel's largest
    assert (root / "kc" / "cpu.weight").read_text() == str(V2_WEIGHT_MAX)
    assert (root / "cgroup.subtree_control").read_text() == "+cpu"  # the kernel's file takes "+cpu" and lists "cpu"


def test_cgroup_v2s_cpu_controller_already_on_for_the_children_is_left_as_it_is(tmp_path: Path) -> None:
    root = v2_root(tmp_path, subtree="cpu memory")
    assert prepare("kc", "2", "cgroupfs", root).parent == "/kc"
    assert (root / "cgroup.subtree_control").read_text() == "cpu memory\n"


@pytest.mark.parametrize(
    ("name", "version", "driver", "why"),
    [
        ("", "2", "cgroupfs", "--job-cgroup is empty"),
        ("../../tmp/x", "2", "cgroupfs", "--job-cgroup '../../tmp/x' is not one folder name"),
        ("/tmp/x", "2", "cgroupfs", "--job-cgroup '/tmp/x' is not one folder name"),
        ("kcoral", "2", "systemd", "cgroup driver is systemd"),
        ("kcoral", "2", "", "cgroup driver is unknown, not cgroupfs"),
        ("kcoral", "", "cgroupfs", "cgroup version unknown"),
    ],
)
def test_the_engines_default_parent_stays_where_kcoral_cannot_own_one(
    tmp_path: Path, name: str, version: str, driver: str, why: str
) -> None:
    got = prepare(name, version, driver, v2_root(tmp_path))
    assert got.parent == "" and why in got.reason and why in got.describe()
    assert "compete for the leased cores" in got.describe()
    assert not (tmp_path / "kcoral").exists()


def test_no_cpu_controller_or_a_weight_that_cannot_be_written_keeps_the_default(tmp_path: Path) -> None:
    got = prepare("kcoral", "2", "cgroupfs", v2_root(tmp_path, "memory pids"))
    assert got.reason == "the cgroup v2 root has no cpu controller"
    v1 = tmp_path / "v1"
    (v1 / "cpu" / "kcoral" / "cpu.shares").mkdir(parents=True)  # a folder where the file should be
    got = prepare("kcoral", "1", "cgroupfs", v1)
    assert got.parent == "" and "cannot set" in got.reason and "cpu.shares" in got.reason


def test_pressure_stalls_are_kept_where_cgroup_v2s_cpu_pressure_has_a_full_line(tmp_path: Path) -> None:
    """What doctor says of how the judge reads others' work on a candidate's core (tasks.harness.cpuwatch):
    the root's cpu.pressure of the H100 host, a kernel before 5.13 (no full line), no PSI, cgroup v1."""
    pressure = tmp_path / "cpu.pressure"
    pressure.write_text(
        "some avg10=0.51 avg60=0.80 avg300=0.23 total=1285892\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
    )
    assert pressure_stalls("2", tmp_path) is True
    assert pressure_stalls("1", tmp_path) is False
    pressure.write_text("some avg10=0.00 avg60=0.00 avg300=0.00 total=10\n")
    assert pressure_stalls("2", tmp_path) is False
    pressure.unlink()
    assert pressure_stalls("2", tmp_path) is False
