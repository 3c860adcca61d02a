"""``-e NAME=VALUE`` / ``-e NAME`` options, parsed here and checked by the server's own rule
(kcoral.protocol.jobenv.refusal, which the server applies again), so a refusal shows up before anything
is packed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kcoral.protocol.errors import UsageError
from kcoral.protocol.jobenv import refusal

__all__ = ["check_env_name", "parse_env_options", "refusal"]


def check_env_name(name: str) -> None:
    """UsageError unless ``name`` may be sent."""
    why = refusal(name)
    if why:
        raise UsageError(why)


def parse_env_options(options: Iterable[str], local_env: Mapping[str, str]) -> dict[str, str]:
    """``["A=1", "B"]`` -> ``{"A": "1", "B": local_env["B"]}``; the last of repeated names wins.

    ``NAME`` alone copies the local value and is an error when the name is not set locally.
    """
    env: dict[str, str] = {}
    for option in options:
        name, sep, value = option.partition("=")
        check_env_name(name)
        if not sep:
            if name not in local_env:
                raise UsageError(f"-e {name}: not set in the local environment (use -e {name}=VALUE)")
            value = local_env[name]
        if "\x00" in value:
            raise UsageError(f"-e {name}: the value contains a NUL byte")
        env[name] = value
    return env
