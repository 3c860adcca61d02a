"""What a job image says it holds is parsed strictly: it is the image's own output."""

from __future__ import annotations

import json

import pytest

from kcoral.runner.imageprobe import parse_answer


def answer(doc: object) -> bytes:
    return ("some noise first\n" + json.dumps(doc) + "\n").encode()


def test_names_and_versions_are_kept_sorted_case_blind() -> None:
    found = parse_answer(answer({"python": "3.11.2", "packages": {"torch": "2.5.1+cpu", "Numpy": "1.26.4"}}))
    assert found.python == "3.11.2" and not found.error
    assert list(found.packages.items()) == [("Numpy", "1.26.4"), ("torch", "2.5.1+cpu")]


def test_entries_that_are_not_a_name_and_a_version_are_dropped() -> None:
    hostile = {"\x1b]52;c;x\x07": "1.0", "ok": "1.0", "spaces in name": "1", "long": "9" * 200, "n": "1;rm -rf"}
    found = parse_answer(answer({"python": "3.12.0", "packages": hostile}))
    assert found.packages == {"ok": "1.0"}


@pytest.mark.parametrize(
    "raw",
    [b"", b"not json", b"\xff\xfe", answer([1]), answer({"python": "3"}), answer({"python": "3 x", "packages": {}}),
     answer({"python": "3.11", "packages": []})],
)  # fmt: skip
def test_an_unreadable_answer_is_an_error_not_a_crash(raw: bytes) -> None:
    found = parse_answer(raw)
    assert found.error == "the image's answer was not readable" and found.packages == {} and found.python == ""
