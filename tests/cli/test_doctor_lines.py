"""What `kcoral doctor` prints of a server's answer: text the server chose (a task's, a slot's or a
calibration workload's name) reaches the terminal escaped, never as a control sequence it would act on."""

from __future__ import annotations

from kcoral.cli.commands.doctor import Check, _calibrations, check_lines

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
