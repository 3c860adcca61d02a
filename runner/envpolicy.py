"""The job environment: the server's base, the operator's additions, and the client's validated pairs
(the names' rule is kcoral.protocol.jobenv.refusal, which the client applies first)."""

from __future__ import annotations

from collections.abc import Mapping

from kcoral.protocol.errors import BadRequest
from kcoral.protocol.jobenv import BASE_JOB_ENV, refusal
from kcoral.runner.limits import Limits


def validate_client_env(env: Mapping[str, str], limits: Limits) -> dict[str, str]:
    """Return the client's pairs unchanged, or raise BadRequest naming the first bad one."""
    total = 0
    for name, value in env.items():
        why = refusal(name)
        if why:
            raise BadRequest(why)
        if "\x00" in value:
            raise BadRequest(f"the value of {name} contains a NUL byte")
        total += len(name) + len(value.encode()) + 2
    if total > limits.env_bytes:
        raise BadRequest(f"environment is {total} bytes; the limit is {limits.env_bytes}")
    return dict(env)


def job_environment(operator_env: Mapping[str, str], client_env: Mapping[str, str], job_id: str) -> dict[str, str]:
    """The whole environment of a job container: client pairs cannot override the rest."""
    env = dict(client_env)
    env.update(BASE_JOB_ENV)
    env.update(operator_env)
    env["KCORAL_JOB_ID"] = job_id
    return env
