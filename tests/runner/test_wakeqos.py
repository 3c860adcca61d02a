"""The PM QoS request an evaluation holds (runner.wakeqos), on this host's real /dev/cpu_dma_latency."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kcoral.runner.wakeqos import (
    HOSTS_OWN_US,
    NO_DRIVER_FIX,
    PATH,
    held_now,
    holdable,
    none_asked,
    unheeded,
    wake_latency,
)

#: the request the kernel honours is the smallest any process holds: an evaluation beside this file (the
#: concurrent lane's other worker) would hold 0 and move the aggregate these tests read
pytestmark = pytest.mark.alone

needs_qos = pytest.mark.skipif(
    not os.access(PATH, os.R_OK | os.W_OK), reason=f"{PATH} cannot be opened here (not root, or not Linux)"
)


@pytest.fixture
def driver(tmp_path: Path) -> str:
    """A cpuidle driver's name as sysfs gives it, for a host that would heed a request (these tests are about
    the request itself, whichever driver this host has)."""
    path = tmp_path / "current_driver"
    path.write_text("haltpoll\n")
    return str(path)


@needs_qos
def test_the_request_holds_while_inside_and_goes_with_it(driver: str) -> None:
    before = held_now()
    assert before is not None
    with wake_latency(0, driver=driver) as held:
        assert held == "0 us" and held_now() == 0
        with wake_latency(5, driver=driver) as also:  # a second request: the smallest one holds
            assert also == "5 us" and held_now() == 0
        assert held_now() == 0
    assert held_now() == before


@needs_qos
def test_a_larger_request_than_the_host_holds_changes_nothing(driver: str) -> None:
    before = held_now()
    assert before is not None
    with wake_latency(before, driver=driver) as held:  # the kernel's own value: no request at all
        assert held == none_asked(before) and held_now() == before
    with wake_latency(1000, driver=driver) as held, wake_latency(HOSTS_OWN_US - 1, driver=driver) as larger:
        assert (held, larger) == ("1000 us", f"{HOSTS_OWN_US - 1} us") and held_now() == 1000


def test_a_host_without_the_interface_says_why(tmp_path: Path, driver: str) -> None:
    with wake_latency(0, str(tmp_path / "absent"), driver) as held:
        assert held.startswith("not held: ") and "absent" in held
    assert held_now(str(tmp_path / "absent")) is None


def test_the_request_is_a_native_int32_written_once(tmp_path: Path, driver: str) -> None:
    target = tmp_path / "qos"
    target.write_bytes(b"")
    with wake_latency(7, str(target), driver) as held:
        assert held == "7 us" and target.read_bytes() == (7).to_bytes(4, "little")
        assert held_now(str(target)) == 7


def test_what_health_says_it_would_hold(tmp_path: Path, driver: str) -> None:
    target = tmp_path / "qos"
    target.write_bytes(b"")
    assert holdable(0, str(target), driver) == {"ok": True, "held": "0 us while an evaluation runs"}
    assert holdable(0, str(tmp_path / "absent"))["ok"] is False
    assert "not held: " in str(holdable(0, str(tmp_path / "absent"))["held"])
    assert holdable(HOSTS_OWN_US, str(tmp_path / "absent"))["ok"] is True  # nothing asked, nothing to open
    assert target.read_bytes() == b""  # asking whether it could is no request


def test_the_hosts_own_policy_or_more_holds_nothing_and_never_overflows(tmp_path: Path) -> None:
    target = tmp_path / "qos"
    target.write_bytes(b"")
    for limit in (HOSTS_OWN_US, 3_000_000_000, 1 << 40):  # past an int32: a request could not carry it
        with wake_latency(limit, str(target)) as held:
            assert held.startswith("none asked") and str(limit) in held
    assert target.read_bytes() == b""


def test_a_host_without_a_cpuidle_driver_holds_nothing_and_says_why(tmp_path: Path) -> None:
    """With no cpuidle driver the kernel idles in its default idle (a halt) and asks no PM QoS request:
    writing one would change nothing, so the evaluation says it is not held, and doctor how to fix it."""
    target, none = tmp_path / "qos", tmp_path / "current_driver"
    target.write_bytes(b"")
    none.write_text("none\n")
    with wake_latency(0, str(target), str(none)) as held:
        assert held.startswith("not held: this host has no cpuidle driver") and str(none) in held
    assert target.read_bytes() == b""  # nothing asked of a host that would not heed it
    assert holdable(0, str(target), str(none)) == {"ok": False, "held": held, "fix": NO_DRIVER_FIX}
    assert holdable(HOSTS_OWN_US, str(target), str(none))["ok"] is True  # the host's own policy was asked for
    # a host whose sysfs does not say (no file, or another driver) is taken at its word, as before
    assert unheeded(str(tmp_path / "absent")) == "" and unheeded(str(target)) == ""
