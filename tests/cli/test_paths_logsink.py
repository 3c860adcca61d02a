"""cli.paths (server-given output names) and cli.logsink (pass-through + kept tail)."""

from __future__ import annotations

import io
from pathlib import Path, PurePosixPath

import pytest

from kcoral.cli.errors import ServerError
from kcoral.cli.logsink import LogSink
from kcoral.cli.paths import output_destination, safe_output_path


@pytest.mark.parametrize("name", ["a.txt", "dir/b.bin", "./c", "d//e"])
def test_safe_paths(name: str) -> None:
    assert not safe_output_path(name).is_absolute()


def test_safe_path_normalises() -> None:
    assert safe_output_path("./x//y") == PurePosixPath("x/y")


BAD_NAMES = ["", "/etc/passwd", "../x", "a/../../x", "a/..", "a\\b", "a\x00b", ".", "./"]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_unsafe_paths(name: str) -> None:
    with pytest.raises(ServerError):
        safe_output_path(name)


def test_destination_stays_inside_even_through_symlinks(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "esc").symlink_to(tmp_path)
    assert output_destination(out, "a/b.txt") == (out / "a" / "b.txt").resolve()
    with pytest.raises(ServerError, match="outside"):
        output_destination(out, "esc/x.txt")


def test_logsink_passes_through_and_keeps_tail() -> None:
    stream = io.BytesIO()
    sink = LogSink(stream, keep=4)
    sink.write(b"abc")
    assert not sink.truncated and sink.text() == "abc"
    sink.write(b"defg")
    assert stream.getvalue() == b"abcdefg"
    assert sink.total == 7 and sink.truncated and sink.text() == "defg"


def test_logsink_decodes_with_replacement() -> None:
    sink = LogSink(None, keep=100)
    sink.write(b"ok \xff\xfe")
    assert sink.text().startswith("ok ") and "\ufffd" in sink.text()


def test_logsink_survives_a_closed_pipe() -> None:
    class Broken(io.BytesIO):
        def write(self, _b: bytes) -> int:  # type: ignore[override]
            raise BrokenPipeError

    sink = LogSink(Broken(), keep=10)
    sink.write(b"x")
    sink.write(b"y")
    assert sink.broken_pipe and sink.text() == "xy"
