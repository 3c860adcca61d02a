"""runner.relpath: the one rule for relative paths that must stay inside their folder."""

from __future__ import annotations

import pytest

from kcoral.runner.relpath import relative_inside


@pytest.mark.parametrize(
    ("name", "normal"),
    [
        ("a.txt", "a.txt"),
        ("./x//y", "x/y"),
        ("d/e/", "d/e"),
        (".", "."),
        ("./", "."),
        ("a..b/c", "a..b/c"),
        ("...", "..."),
        ("a/./b", "a/b"),
    ],
)
def test_inside(name: str, normal: str) -> None:
    assert relative_inside(name) == normal


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("", "empty"),
        ("a\x00b", "NUL"),
        ("/etc/passwd", "absolute"),
        ("C:evil", "absolute"),
        ("..", "'..'"),
        ("../x", "'..'"),
        ("a/../b", "'..'"),
        ("a/..", "'..'"),
        ("a/b/../../..", "'..'"),
    ],
)
def test_outside(name: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        relative_inside(name)
