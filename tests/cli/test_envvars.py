"""cli.envvars: -e parsing and the client-side name policy."""

from __future__ import annotations

import pytest

from kcoral.cli.envvars import check_env_name, parse_env_options, refusal
from kcoral.protocol.errors import UsageError


def test_name_value_and_copied_local_value() -> None:
    env = parse_env_options(["A=1", "B=x=y", "EMPTY=", "FROM_HERE"], {"FROM_HERE": "local"})
    assert env == {"A": "1", "B": "x=y", "EMPTY": "", "FROM_HERE": "local"}


def test_last_repeated_name_wins() -> None:
    assert parse_env_options(["A=1", "A=2"], {}) == {"A": "2"}


def test_copy_of_unset_local_variable_is_an_error() -> None:
    with pytest.raises(UsageError, match="not set in the local environment"):
        parse_env_options(["NOPE"], {})


@pytest.mark.parametrize("name", ["", "1ABC", "A-B", "A B", "É", "A.B", "=x"])
def test_bad_names(name: str) -> None:
    with pytest.raises(UsageError, match="is not a valid environment variable name"):
        check_env_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "LD_PRELOAD", "LD_LIBRARY_PATH", "ld_preload", "NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES",
        "KCORAL_JOB_ID", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONSAFEPATH",
        "PYTHONNOUSERSITE", "PATH", "HOME", "DYLD_INSERT_LIBRARIES", "BASH_ENV", "HIP_VISIBLE_DEVICES",
    ],
)  # fmt: skip
def test_refused_names(name: str) -> None:
    with pytest.raises(UsageError, match=name):
        parse_env_options([f"{name}=x"], {})


@pytest.mark.parametrize("name", ["FOO", "TORCH_LOGS", "OMP_NUM_THREADS", "PYTHONHASHSEED", "PYTHONWARNINGS", "A1"])
def test_allowed_names(name: str) -> None:
    assert refusal(name) is None
    assert parse_env_options([f"{name}=1"], {}) == {name: "1"}


def test_nul_in_value_is_refused() -> None:
    with pytest.raises(UsageError, match="NUL"):
        parse_env_options(["A=x\x00y"], {})


def test_the_client_checks_with_the_servers_rule() -> None:
    """One rule: the client's check is the server's function, not a copy of it."""
    from kcoral.cli import envvars
    from kcoral.protocol import jobenv
    from kcoral.runner import envpolicy

    assert envvars.refusal is jobenv.refusal is envpolicy.refusal
    with pytest.raises(UsageError, match="set by the server"):
        parse_env_options(["TMPDIR=x"], {})  # a name of the server's base environment (kcoral.protocol.jobenv)
