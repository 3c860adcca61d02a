"""ncu option checking and command building (profiling.ncu)."""

from __future__ import annotations

import pytest

from kcoral.profiling.ncu import (
    ALLOWED,
    NcuOptionError,
    build_ncu_command,
    check_command,
    driver_command,
    normalise_ncu_options,
)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (["--set", "full"], ["--set=full"]),
        (["--set=full"], ["--set=full"]),
        (["-c", "1"], ["--launch-count=1"]),
        (["-c=3"], ["--launch-count=3"]),
        (["-c5"], ["--launch-count=5"]),
        (["--launch-skip", "2", "-s", "4"], ["--launch-skip=2", "--launch-skip=4"]),
        (["-k", "regex:^matmul.*"], ["--kernel-name=regex:^matmul.*"]),
        (["--kernel-name=regex:-starts-with-dash"], ["--kernel-name=regex:-starts-with-dash"]),
        (
            ["--kernel-name-base", "function", "--kernel-id", "::matmul:2"],
            ["--kernel-name-base=function", "--kernel-id=::matmul:2"],
        ),
        (
            ["--nvtx", "--nvtx-include", "target/", "--nvtx-exclude=warmup/"],
            ["--nvtx", "--nvtx-include=target/", "--nvtx-exclude=warmup/"],
        ),
        (
            ["--section", "SpeedOfLight", "--metrics", "gpu__time_duration.sum,sm__throughput.avg"],
            ["--section=SpeedOfLight", "--metrics=gpu__time_duration.sum,sm__throughput.avg"],
        ),
        (
            ["--replay-mode", "application", "--clock-control", "none", "--cache-control=none"],
            ["--replay-mode=application", "--clock-control=none", "--cache-control=none"],
        ),
        (["--target-processes", "all", "--import-source", "yes"], ["--target-processes=all", "--import-source=yes"]),
        # a value that looks like an option is kept as the value, and can no longer be read as one
        (["--set", "--export"], ["--set=--export"]),
    ],
)
def test_allowed_options_both_syntaxes(given: list[str], expected: list[str]) -> None:
    assert normalise_ncu_options(given) == expected


def test_every_listed_option_is_allowed() -> None:
    assert set(ALLOWED) == {
        "--set",
        "--section",
        "--metrics",
        "--launch-count",
        "--launch-skip",
        "--kernel-name",
        "--kernel-name-base",
        "--kernel-id",
        "--nvtx",
        "--nvtx-include",
        "--nvtx-exclude",
        "--replay-mode",
        "--clock-control",
        "--cache-control",
        "--target-processes",
        "--import-source",
    }


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (["-o", "x"], "-o is not allowed"),
        (["--export", "/tmp/x"], "--export is not allowed"),
        (["--export=/tmp/x"], "--export is not allowed"),
        (["--config-file", "on"], "--config-file is not allowed"),
        (["--config-file-path", "/x"], "--config-file-path is not allowed"),
        (["--log-file", "/tmp/log"], "--log-file is not allowed"),
        (["-f"], "-f is not allowed"),
        (["--force-overwrite"], "--force-overwrite is not allowed"),
        (["--import", "r.ncu-rep"], "--import is not allowed"),
        (["--section-folder", "/x"], "not allowed through kcoral"),
        (["--mode", "launch"], "not allowed through kcoral"),
        (["-x"], "not allowed through kcoral"),
        (["python"], "put the command after --"),
        (["--set", "full", "--"], "sent separately"),
        (["--set"], "needs a value"),
        (["--set="], "needs a value"),
        (["-c", "many"], "non-negative integer"),
        (["--launch-skip=-1"], "non-negative integer"),
        (["--nvtx=1"], "takes no value"),
        (["--metrics", "a\nb"], "newline"),
    ],
)
def test_refused_options(given: list[str], message: str) -> None:
    with pytest.raises(NcuOptionError, match=message):
        normalise_ncu_options(given)


def test_refusal_names_the_allowed_list() -> None:
    with pytest.raises(NcuOptionError) as err:
        normalise_ncu_options(["--bogus"])
    assert "--launch-count/-c" in str(err.value) and "--import-source" in str(err.value)


def test_command_building() -> None:
    argv = build_ncu_command(
        ["-k", "regex:gemm", "-c", "1", "--set=full"], ["python", "cap.py", "--n", "3"], ncu="/usr/local/cuda/bin/ncu"
    )
    assert argv == [
        "/usr/local/cuda/bin/ncu",
        "--config-file",
        "0",
        "--export",
        "/job/out/report.ncu-rep",
        "--kernel-name=regex:gemm",
        "--launch-count=1",
        "--set=full",
        "python",
        "cap.py",
        "--n",
        "3",
    ]
    assert driver_command("python3", argv) == [
        "python3",
        "-m",
        "kcoral.profiling.run_tool",
        "ncu",
        "--report",
        "/job/out/report.ncu-rep",
        "--summary",
        "/job/out/report.ncu-rep.json",
        "--",
        *argv,
    ]


@pytest.mark.parametrize("command", [[], ["--set", "full"], ["py\x00"]])
def test_bad_commands(command: list[str]) -> None:
    with pytest.raises(NcuOptionError):
        check_command(command)
    with pytest.raises(NcuOptionError):
        build_ncu_command([], command)
