"""protocol.relpath: the one rule for relative paths that must stay inside their folder."""

from __future__ import annotations

import pytest

from kcoral.protocol.relpath import relative_inside


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


EMPTY, NUL, ABSOLUTE, DOTDOT = (
    "an empty name",
    "a NUL byte in a name",
    "an absolute path",
    "a path leaving its folder ('..')",
)


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("", EMPTY),
        ("a\x00b", NUL),
        ("/etc/passwd", ABSOLUTE),
        ("C:evil", ABSOLUTE),
        ("..", DOTDOT),
        ("../x", DOTDOT),
        ("a/../b", DOTDOT),
        ("a/..", DOTDOT),
        ("a/b/../../..", DOTDOT),
    ],
)
def test_outside(name: str, why: str) -> None:
    with pytest.raises(ValueError) as refused:
        relative_inside(name)
    assert str(refused.value) == why  # the exact reason: callers put it in front of the user
