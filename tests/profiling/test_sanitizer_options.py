"""profiling.sanitizer: the allow-list of compute-sanitizer options and the in-container command."""

from __future__ import annotations

import pytest

from kcoral.profiling import sanitizer as san
from kcoral.profiling.sanitizer_findings import ERRORS_EXIT


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ([], ["--tool=memcheck"]),
        (["--tool", "racecheck"], ["--tool=racecheck"]),
        (["--leak-check=full", "--print-limit", "5"], ["--tool=memcheck", "--leak-check=full", "--print-limit=5"]),
        (["--print-limit", "0", "--tool=initcheck"], ["--tool=initcheck", "--print-limit=0"]),
        (["--tool", "racecheck", "--racecheck-report", "hazard"], ["--tool=racecheck", "--racecheck-report=hazard"]),
        (
            ["--check-device-heap", "no", "--padding", "32"],
            ["--tool=memcheck", "--check-device-heap=no", "--padding=32"],
        ),
        (
            ["--kernel-name", "kns=add_kernel", "--launch-count=1"],
            ["--tool=memcheck", "--kernel-name=kns=add_kernel", "--launch-count=1"],
        ),
    ],
)
def test_allowed_options_both_syntaxes(given: list[str], expected: list[str]) -> None:
    assert san.normalise_options(given) == expected


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (["--save", "x.xml"], "--save is not allowed: the server chooses"),
        (["--log-file=x"], "--log-file is not allowed"),
        (["--xml", "no"], "--xml is not allowed"),
        (["--error-exitcode", "0"], "exit code 86"),
        (["--prefix", "x"], "--prefix is not allowed"),
        (["--injection-path", "/tmp/x.so"], "not allowed through kcoral (allowed: --tool"),
        (["-t", "memcheck"], "unexpected word"),
        (["--tool", "cuda-memcheck"], "takes one of memcheck, racecheck, initcheck, synccheck"),
        (["--print-limit", "-1"], "non-negative integer"),
        (["--print-limit", "1" * 12], "non-negative integer"),
        (["--print-limit", "\u0661"], "non-negative integer"),  # an Arabic-Indic digit is no ASCII digit
        (["--leak-check", "yes"], "takes one of full, no"),
        (["--tool", "racecheck", "--leak-check", "full"], "--leak-check applies to memcheck, not racecheck"),
        (["--racecheck-report", "all"], "applies to racecheck, not memcheck"),
        (["--print-limit", "1", "--print-limit", "2"], "given twice"),
        (["--kernel-name", "a\nb"], "control character"),
        (["--kernel-name", ""], "needs a value"),
        (["--print-limit"], "needs a value"),
        (["python"], "unexpected word"),
        (["--"], "the command is sent separately"),
    ],
)
def test_refused_options(given: list[str], message: str) -> None:
    with pytest.raises(san.SanitizerOptionError, match=message.replace("(", r"\(")):
        san.normalise_options(given)


def test_every_listed_option_has_a_valid_value() -> None:
    for option in san.ALLOWED.values():
        value = option.choices[0] if option.choices else "1" if option.integer else "kns=k"
        tool = option.tools[0] if option.tools else "memcheck"
        words = ["--tool", tool] if option.long != "--tool" else []
        expected = option.long if option.flag else f"{option.long}={value}"
        assert expected in san.normalise_options([*words, option.long, value])


def test_a_flag_is_passed_bare_and_only_when_asked_for() -> None:
    """compute-sanitizer 2025.3 takes --track-unused-memory without a value (its help on the H200)."""
    on = ["--tool", "initcheck", "--track-unused-memory", "yes"]
    off = ["--tool", "initcheck", "--track-unused-memory=no"]
    assert san.normalise_options(on) == ["--tool=initcheck", "--track-unused-memory"]
    assert san.normalise_options(off) == ["--tool=initcheck"]


def test_command_building() -> None:
    argv = san.build_command(["--tool", "racecheck", "--print-limit", "3"], ["python", "race.py", "--n", "4"])
    assert argv == [
        "compute-sanitizer",
        "--tool=racecheck",
        f"--error-exitcode={ERRORS_EXIT}",
        "--log-file=/job/out/sanitizer.txt",
        "--save=/job/out/sanitizer.xml",
        "--xml",
        "--print-limit=3",
        "python",
        "race.py",
        "--n",
        "4",
    ]
    host = san.build_command([], ["python", "x.py"], "/usr/local/cuda/bin/compute-sanitizer")
    assert host[:2] == ["/usr/local/cuda/bin/compute-sanitizer", "--tool=memcheck"]
    driver = san.driver_command("python3", host)
    assert driver[:4] == ["python3", "-m", "kcoral.profiling.run_tool", "sanitizer"]
    assert driver[4:8] == ["--text", "/job/out/sanitizer.txt", "--xml", "/job/out/sanitizer.xml"]
    assert driver[driver.index("--") + 1 :] == host


@pytest.mark.parametrize("command", [[], ["--tool", "x"], ["python", "a\x00b"]])
def test_bad_commands(command: list[str]) -> None:
    with pytest.raises(san.SanitizerOptionError):
        san.build_command([], command)


def test_the_errors_exit_code_is_none_of_kcorals_own() -> None:
    from kcoral.cli.output import VERDICT_EXIT_CODES
    from kcoral.protocol import errors

    own = {v for v in VERDICT_EXIT_CODES.values() if v is not None}
    own |= {getattr(errors, name) for name in dir(errors) if name.startswith("EXIT_")}
    assert ERRORS_EXIT not in own
