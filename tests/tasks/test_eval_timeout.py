"""The task's manifest owns an evaluation's time limit (tasks.evaluate.EvalKind.validate): asked for
nothing, the job gets the task's timeout_s; more than it is refused; the server's limit is the
ceiling of both."""

from __future__ import annotations

from typing import Any

import pytest

from kcoral.protocol.errors import BadRequest
from kcoral.protocol.models import EvalSpec
from kcoral.runner.jobkinds import HostFacts
from kcoral.runner.limits import Limits
from kcoral.runner.settings import Settings
from kcoral.tasks.evaluate import EvalKind


def services(**limits: Any) -> HostFacts:
    return HostFacts(Settings(limits=Limits(**limits)), (), lambda image: False)


def test_no_timeout_asked_gets_the_tasks() -> None:
    kept = EvalKind().validate(EvalSpec(task="demo/softmax"), services())
    assert isinstance(kept, EvalSpec) and kept.timeout_s == 300 and kept.task == "demo/softmax"


def test_a_shorter_timeout_is_kept_and_a_longer_one_refused() -> None:
    assert EvalKind().validate(EvalSpec(task="demo/softmax", timeout_s=120), services()).timeout_s == 120
    with pytest.raises(BadRequest) as info:
        EvalKind().validate(EvalSpec(task="demo/softmax", timeout_s=1500), services())
    assert info.value.message == "task demo/softmax allows 300 s; 1500 s is more (leave --timeout out to get it)"


def test_the_servers_limit_is_the_ceiling() -> None:
    assert EvalKind().validate(EvalSpec(task="demo/softmax"), services(max_timeout_s=100)).timeout_s == 100
    with pytest.raises(BadRequest, match="allows 100 s"):
        EvalKind().validate(EvalSpec(task="demo/softmax", timeout_s=200), services(max_timeout_s=100))
