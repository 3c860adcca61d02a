"""run-iket argument checking and command building (profiling.iket)."""

from __future__ import annotations

import pytest

from kcoral.profiling.iket import IketOptionError, build_iket_command, driver_command, split_iket_argv


def test_split() -> None:
    assert split_iket_argv(["--clobber", "profile", "--postprocess", "json"]) == (
        ["--clobber"],
        ["--postprocess", "json"],
    )
    assert split_iket_argv(["profile"]) == ([], [])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--output-dir", "/tmp/x", "profile"], "--output-dir is not allowed"),
        (["--output-dir=/tmp/x", "profile"], "--output-dir is not allowed"),
        (["--out", "/tmp/x", "profile"], "--out is not allowed"),
        (["profile", "--output-dir", "d"], "--output-dir is not allowed"),
        (["-o", "d", "profile"], "-o is not allowed"),
        (["--postprocess", "json"], "expected"),
        (["profile", "--", "python"], "sent separately"),
    ],
)
def test_refused(argv: list[str], message: str) -> None:
    with pytest.raises(IketOptionError, match=message):
        split_iket_argv(argv)


def test_build_asks_for_every_trace_shape_when_the_client_chose_none() -> None:
    argv = build_iket_command(
        ["profile", "--enabled-cluster", "0,0,0"], ["python", "capture.py"], run_iket="/opt/venv/bin/run-iket"
    )
    assert argv == [
        "/opt/venv/bin/run-iket",
        "--output-dir",
        "/job/out/.iket-stage",
        "profile",
        "--postprocess",
        "all",
        "--enabled-cluster",
        "0,0,0",
        "--",
        "python",
        "capture.py",
    ]


def test_build_keeps_the_clients_postprocess() -> None:
    argv = build_iket_command(["--clobber", "profile", "--postprocess=all"], ["python3", "c.py", "--", "x"])
    assert argv == [
        "run-iket",
        "--output-dir",
        "/job/out/.iket-stage",
        "--clobber",
        "profile",
        "--postprocess=all",
        "--",
        "python3",
        "c.py",
        "--",
        "x",
    ]
    assert driver_command("python3", argv)[:9] == [
        "python3",
        "-m",
        "kcoral.profiling.run_tool",
        "iket",
        "--stage",
        "/job/out/.iket-stage",
        "--out",
        "/job/out",
        "--",
    ]


def test_build_needs_a_command() -> None:
    with pytest.raises(IketOptionError, match="no command"):
        build_iket_command(["profile"], [])
