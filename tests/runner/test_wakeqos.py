"""The PM QoS request an evaluation holds (runner.wakeqos), on this host's real /dev/cpu_dma_latency."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kcoral.runner.wakeqos import HOSTS_OWN_US, PATH, held_now, holdable, none_asked, wake_latency

#: the request the kernel honours is the smallest any process holds: an evaluation beside this file (the
#: concurrent lane's other worker) would hold 0 and move the aggregate these tests read
pytestmark = pytest.mark.alone

needs_qos = pytest.mark.skipif(
    not os.access(PATH, os.R_OK | os.W_OK), reason=f"{PATH} cannot be opened here (not root, or not Linux)"
)


@needs_qos
def test_the_request_holds_while_inside_and_goes_with_it() -> None:
    before = held_now()
    assert before is not None
    with wake_latency(0) as held:
        assert held == "0 us" and held_now() == 0
        with wake_latency(5) as also:  # a second request: the smallest one holds
            assert also == "5 us" and held_now() == 0
        assert held_now() == 0
    assert held_now() == before


@needs_qos
def test_a_larger_request_than_the_host_holds_changes_nothing() -> None:
    before = held_now()
    assert before is not None
    with wake_latency(before) as held:  # the kernel's own value: no request at all
        assert held == none_asked(before) and held_now() == before
    with wake_latency(1000) as held, wake_latency(HOSTS_OWN_US - 1) as larger:
        assert (held, larger) == ("1000 us", f"{HOSTS_OWN_US - 1} us") and held_now() == 1000


def test_a_host_without_the_interface_says_why(tmp_path: Path) -> None:
    with wake_latency(0, str(tmp_path / "absent")) as held:
        assert held.startswith("not held: ") and "absent" in held
    assert held_now(str(tmp_path / "absent")) is None


def test_the_request_is_a_native_int32_written_once(tmp_path: Path) -> None:
    target = tmp_path / "qos"
    target.write_bytes(b"")
    with wake_latency(7, str(target)) as held:
        assert held == "7 us" and target.read_bytes() == (7).to_bytes(4, "little")
        assert held_now(str(target)) == 7


def test_what_health_says_it_would_hold(tmp_path: Path) -> None:
    target = tmp_path / "qos"
    target.write_bytes(b"")
    assert holdable(0, str(target)) == {"ok": True, "held": "0 us while an evaluation runs"}
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
