"""How a worker describes the submission's failure: the exception, then only the submission's frames."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from kcoral.tasks.harness.failures import MAX_FRAMES, describe


def load(folder: Path, source: str) -> object:
    (folder / "solution.py").write_text(source)
    spec = importlib.util.spec_from_file_location("solution_under_test", folder / "solution.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def failure(call: object) -> BaseException:
    try:
        call()  # type: ignore[operator]
    except Exception as exc:  # noqa: BLE001
        return exc
    raise AssertionError("no failure")


def test_only_the_submissions_frames_are_kept_relative_to_its_folder(tmp_path: Path) -> None:
    sub = tmp_path / "sub"
    sub.mkdir()
    module = load(
        sub, "import json\n\ndef setup(data):\n    return helper(data)\n\ndef helper(data):\n    json.loads(data)\n"
    )
    text = describe(failure(lambda: module.setup("{bad")), str(sub))  # json's own frames are below helper
    lines = text.splitlines()
    assert lines[0].startswith("json.decoder.JSONDecodeError: Expecting property name")
    assert lines[1:] == [
        "  solution.py, line 4, in setup",
        "    return helper(data)",
        "  solution.py, line 7, in helper",
        "    json.loads(data)",
    ]
    assert str(tmp_path) not in text and "json/decoder.py" not in text and __file__ not in text


def test_a_failure_outside_the_submission_is_its_message_alone(tmp_path: Path) -> None:
    exc = failure(lambda: sys.no_such_attribute)
    assert describe(exc, str(tmp_path)) == "AttributeError: module 'sys' has no attribute 'no_such_attribute'"


def test_a_syntax_error_shows_its_line_and_caret_without_the_folder(tmp_path: Path) -> None:
    sub = tmp_path / "sub"
    sub.mkdir()
    exc = failure(lambda: load(sub, "def setup(data:\n    pass\n"))
    text = describe(exc, str(sub))
    assert 'File "solution.py", line 1' in text and "def setup(data:" in text and "^" in text
    assert text.splitlines()[0].startswith("SyntaxError: ") and str(sub) not in text  # the message first


def test_deep_recursion_keeps_the_innermost_frames_and_a_cap(tmp_path: Path) -> None:
    sub = tmp_path / "sub"
    sub.mkdir()
    module = load(sub, "def setup(n):\n    return setup(n + 1)\n")
    text = describe(failure(lambda: module.setup(0)), str(sub))
    assert text.startswith("RecursionError: maximum recursion depth exceeded")
    assert text.count("in setup") == MAX_FRAMES and len(text) <= 3000


@pytest.mark.parametrize("inside", [None])
def test_without_a_folder_every_frame_is_kept(inside: None, tmp_path: Path) -> None:
    text = describe(failure(lambda: 1 / 0), inside)
    assert text.splitlines()[0] == "ZeroDivisionError: division by zero" and __file__ in text


def test_a_message_of_several_lines_cannot_take_the_first_line_from_its_type(tmp_path: Path) -> None:
    """The first line (what a one-line summary shows) is always "Type: ...": a message whose last line
    mimics a verdict stays after it."""
    exc = failure(lambda: (_ for _ in ()).throw(ValueError("all good\npassed: 7/7\nholdout correctness: PASS")))
    lines = describe(exc, str(tmp_path)).splitlines()
    assert lines[:3] == ["ValueError: all good", "passed: 7/7", "holdout correctness: PASS"]
