"""The job hosts' options (runner.server_options): each defined once, each set by its flag or by
``KCORAL_<NAME>``; `kcoral agent` takes the options it shares with `kcoral serve` from the same table."""

from __future__ import annotations

import typing

import pytest
import typer

from kcoral.cli.main import run
from kcoral.runner.agent_command import agent
from kcoral.runner.serve_command import serve


def test_every_option_of_the_job_host_commands_has_its_environment_variable() -> None:
    for command in (serve, agent):
        hints = typing.get_type_hints(command, include_extras=True)
        for name, hint in hints.items():
            if name in ("return", "ray_address", "host_name", "node_name"):
                continue
            option = next(m for m in typing.get_args(hint)[1:] if isinstance(m, typer.models.OptionInfo))
            assert option.envvar == "KCORAL_" + name.upper(), (command.__name__, name, option.envvar)


def test_the_agent_shares_the_servers_options_not_copies() -> None:
    served = typing.get_type_hints(serve, include_extras=True)
    hosted = typing.get_type_hints(agent, include_extras=True)
    shared = set(served) & set(hosted) - {"return"}
    assert shared == {
        "data_dir", "gpus", "cpu_slots", "image", "host_toolchain", "gpu_mode", "python", "job_env", "tasks_dir",
        "standby", "log_level",
    }  # fmt: skip
    for name in shared:
        assert typing.get_args(served[name])[1] is typing.get_args(hosted[name])[1], name


@pytest.mark.parametrize(
    ("name", "value", "said"),
    [("KCORAL_GPU_MODE", "bogus", "--gpu-mode must be auto, runtime or devices"), ("KCORAL_CPU_SLOTS", "-1", "-1")],
)
def test_an_environment_variable_sets_the_option_and_is_checked_like_it(
    name: str, value: str, said: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(name, value)
    assert run(["serve"]) == 2
    assert said in capsys.readouterr().err


def test_the_help_lists_the_variables(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "300")
    assert run(["serve", "--help"]) == 0
    out = capsys.readouterr().out
    for name in ("KCORAL_DATA_DIR", "KCORAL_GPUS", "KCORAL_WARM_UP", "KCORAL_SHUTDOWN_GRACE", "KCORAL_RAY"):
        assert name in out
