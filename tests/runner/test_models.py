"""Job models: what the API shows of a job, and THE parser of the API's data (protocol.typeddata.from_data)."""

from __future__ import annotations

import json

import pytest

from kcoral.protocol.models import (
    EvalSpec,
    GpuInfo,
    JobState,
    JobTimes,
    JobView,
    NcuSpec,
    OutputFile,
    PythonSpec,
    StepTimes,
    parse_spec,
)
from kcoral.protocol.typeddata import DataError, from_data, to_data


def test_phase_times_follow_the_job_through_its_containers() -> None:
    times = JobTimes(
        created=100.0,
        queued=100.5,
        started=103.0,
        finished=120.25,
        steps=[
            StepTimes(name="supervisor", started=103.5, ended=119.0),
            StepTimes(name="candidate", started=104.0, ended=118.5),
        ],
    )
    assert times.phases == {
        "upload": 0.5, "queue": 2.5, "start": 0.5, "supervisor": 15.5, "candidate": 14.5, "collect": 1.25,
    }  # fmt: skip
    assert JobTimes(created=1.0).phases == {} and JobTimes(created=1.0, queued=3.0).phases == {"upload": 2.0}
    assert to_data(times)["phases"] == times.phases  # the API and --json carry them
    shown = to_data(times) | {"phases": {"forged": 1.0}}
    assert from_data(JobTimes, shown).phases == times.phases  # derived, never read


def test_a_view_comes_back_from_its_json_as_it_was() -> None:
    view = JobView(
        id="20261202-010203-0123abcd",
        owner="alice",
        state=JobState.finished,
        spec=NcuSpec(argv=["--set", "full"], command=["python", "c.py"], timeout_s=60),
        gpus=[GpuInfo(index=0, uuid="GPU-1", name="H200", memory_total_mib=143771)],
        times=JobTimes(created=1.0, queued=2.0, steps=[StepTimes(name="job", started=3.0, ended=4.0)]),
        outputs=[OutputFile(path="a/b.txt", size=3, sha256="ab" * 32)],
    )
    data = json.loads(json.dumps(to_data(view)))
    assert from_data(JobView, data) == view
    assert from_data(JobView, data | {"added_by_a_newer_server": 1}) == view  # a view ignores what it lacks
    assert from_data(list[OutputFile], [to_data(view.outputs[0])]) == view.outputs


KINDS_LINE = "unknown job kind; a server runs: python, eval, ncu, iket, sanitizer, timeline, proton"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"argv": ["m.py"], "timout_s": 5}, "python.timout_s: no such field (a typo is refused)"),
        ({"kind": "eval", "task": "t", "env": {}}, "eval.env: no such field (a typo is refused)"),
        ({"kind": "rm -rf"}, KINDS_LINE),
        ({"kind": ["python"]}, KINDS_LINE),
        (
            {"kind": {"python": 1}},
            KINDS_LINE,
        ),
        ({"kind": None}, KINDS_LINE),
        ({"kind": "eval"}, "eval.task: missing"),
        ({"argv": "m.py"}, "python.argv: must be a list"),
        ({"argv": ["m.py", 3]}, "python.argv.1: must be text"),
        ({"argv": ["\ud800"]}, "python.argv.0: holds a lone surrogate (text that is not valid Unicode)"),
        ({"env": {"A": 1}}, "python.env.A: must be text"),
        ({"env": ["A"]}, "python.env: must be an object"),
        ({"gpus": True}, "python.gpus: must be a whole number"),  # JSON's true is not 1
        ({"gpus": 1.5}, "python.gpus: must be a whole number"),
        ({"gpus": -1}, "python.gpus: must be 0 or more"),
        ({"timeout_s": "5"}, "python.timeout_s: must be a finite number"),
        ({"timeout_s": float("inf")}, "python.timeout_s: must be a finite number"),
        ({"timeout_s": float("nan")}, "python.timeout_s: must be a finite number"),
        ({"timeout_s": 0}, "python.timeout_s: must be more than 0"),
        ({"kind": "eval", "task": "t", "timeout_s": -1}, "eval.timeout_s: must be 0 or more"),
        ({"kind": "eval", "task": "t", "check": "yes"}, "eval.check: must be true or false"),
        ({"image": 5}, "python.image: must be text"),
        ([], "must be an object"),
        ("text", "must be an object"),
    ],
)
def test_a_spec_that_is_not_one_is_refused_with_where_and_why(data: object, message: str) -> None:
    with pytest.raises(DataError) as info:
        from_data(PythonSpec | EvalSpec, data) if not isinstance(data, dict) else parse_spec(data)  # type: ignore[arg-type]
    assert str(info.value) == message


def test_a_spec_is_read_from_json_text_and_its_kind_defaults_to_python() -> None:
    assert parse_spec('{"argv": ["m.py"], "timeout_s": 5}') == PythonSpec(argv=["m.py"], timeout_s=5.0)
    assert parse_spec(b'{"kind": "eval", "task": "demo/softmax"}') == EvalSpec(task="demo/softmax")
    for text in (b"{", b"\xff", b"[" * 100_000):
        with pytest.raises(DataError, match="not JSON"):
            parse_spec(text)
