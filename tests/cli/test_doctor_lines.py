"""What `kcoral doctor` prints of a server's answer: text the server chose (a task's, a slot's or a
calibration workload's name) reaches the terminal escaped, never as a control sequence it would act on."""

from __future__ import annotations

from kcoral.cli.commands.doctor import SHOWN_CHARS, Check, _calibrations, _wake_latency, check_lines

FLOOR = {"requests": 5, "position_ms": 0.0, "spread": 0.01, "half_width": 0.02, "corrected": 1.2}


def test_a_servers_names_are_printed_escaped() -> None:
    evil = "standard\x1b]0;pwned\x07\x1b[2J batch over one call"
    rows = [{"slot": "s\x1b[31m", "task": "demo/softmax", "workloads": {evil: FLOOR}}]
    checks = [*_calibrations(rows), Check("server", "fail", "x", "fix\x1b[2Jit")]
    lines = check_lines(checks)
    assert not any("\x1b" in line or "\x07" in line for line in lines), lines
    assert lines[0].startswith("ok    calibration  demo/softmax on slot s\\x1b[31m: standard\\x1b]0;pwned\\x07"), lines
    said = "batch over one call: 1.2000x in an honest request, spread 0.0100, floor +-2.02% (5 requests)"
    assert lines[0].endswith(said), lines
    assert lines[2].endswith("fix: fix\\x1b[2Jit"), lines


def test_a_servers_text_of_any_length_or_type_stays_one_readable_line() -> None:
    """A hostile server's wake-up check: a fix of 5 MB, or not a string at all, is no terminal bomb."""
    bomb = _wake_latency({"ok": False, "held": "not held: " + "A" * 5_000_000, "fix": "B" * 5_000_000})
    lines = check_lines([bomb])
    assert len(lines) == 2 and all(len(line) < SHOWN_CHARS + 100 for line in lines), [len(x) for x in lines]
    assert lines[0].endswith(" more characters)") and lines[1].endswith("(4999600 more characters)")
    odd = _wake_latency({"ok": False, "held": "not held: x", "fix": ["\x1b[31mred"]})
    assert odd.fix == "run the server as root on the host (it opens /dev/cpu_dma_latency)"
    told = _wake_latency({"ok": False, "held": "not held: y", "fix": "boot it with a cpuidle driver"})
    assert told.status == "warn" and told.fix == "boot it with a cpuidle driver"
