"""A submission's files as the server shows them (runner.submissions): text only, within the source
caps, and the unified diff of two submissions cut at its cap on a whole line. Real tar files."""

from __future__ import annotations

import io
import tarfile
from dataclasses import replace
from pathlib import Path

from kcoral.runner.limits import Limits
from kcoral.runner.submissions import Sources, read_sources, source_diff
from tests.conftest import make_tar

LIMITS = Limits()


def tar(tmp_path: Path, name: str, files: dict[str, str | bytes], link: tuple[str, str] | None = None) -> Path:
    path = tmp_path / name
    path.write_bytes(make_tar(files))
    if link is not None:
        with tarfile.open(path, "a") as archive:
            info = tarfile.TarInfo(link[0])
            info.type, info.linkname = tarfile.SYMTYPE, link[1]
            archive.addfile(info, io.BytesIO())
    return path


def test_text_files_are_shown_and_the_rest_named_with_why(tmp_path: Path) -> None:
    limits = replace(LIMITS, source_file_bytes=100, source_bytes=150, source_files=4)
    files: dict[str, str | bytes] = {
        "a.py": "A = 1\n" * 10,  # 60 bytes: shown
        "b.bin": b"\x00\x01\x02",  # binary
        "c.py": "C = 1\n" * 20,  # 120 bytes: over the file cap
        "d.py": "D = 1\n" * 16,  # 96 bytes: past the 150 in all (60 shown already)
        "e.py": "E",  # past the first 4 files
    }
    found = read_sources(tar(tmp_path, "s.tar", files), limits).by_path()
    assert found["a.py"].text == "A = 1\n" * 10 and found["a.py"].note == ""
    assert found["b.bin"].text is None and found["b.bin"].note == "not text"
    assert (found["c.py"].text, found["c.py"].note) == (None, "over 100 bytes")
    assert (found["d.py"].text, found["d.py"].note) == (None, "past 150 bytes in all")
    assert (found["e.py"].text, found["e.py"].note) == (None, "past the first 4 files")


def test_a_missing_tar_says_so(tmp_path: Path) -> None:
    assert read_sources(tmp_path / "none.tar", LIMITS) == Sources(missing="the submission's files are not kept")


def test_the_diff_is_b_against_a_file_by_file(tmp_path: Path) -> None:
    a = read_sources(
        tar(
            tmp_path, "a.tar", {"solution.py": "x = 1\ny = 2\n", "old.py": "gone\n", "same.py": "s\n", "b.bin": b"\0a"}
        ),
        LIMITS,
    )
    b = read_sources(
        tar(
            tmp_path, "b.tar", {"solution.py": "x = 1\ny = 3\n", "new.py": "hello\n", "same.py": "s\n", "b.bin": b"\0b"}
        ),
        LIMITS,
    )
    diff = source_diff(a, b, LIMITS.diff_bytes)
    assert diff.changed == ["b.bin", "new.py", "old.py", "solution.py"] and not diff.truncated
    assert diff.skipped == ["b.bin: not text"]
    text = diff.text
    assert "--- /dev/null\n+++ b/new.py\n" in text and "+hello" in text
    assert "--- a/old.py\n+++ /dev/null\n" in text and "-gone" in text
    assert "--- a/solution.py\n+++ b/solution.py\n" in text and "-y = 2\n+y = 3\n" in text
    assert "same.py" not in text
    assert source_diff(a, a, LIMITS.diff_bytes).text == ""


def test_the_diff_is_cut_at_its_cap_on_a_whole_line(tmp_path: Path) -> None:
    a = read_sources(tar(tmp_path, "a.tar", {"m.py": "".join(f"line {i}\n" for i in range(1000))}), LIMITS)
    b = read_sources(tar(tmp_path, "b.tar", {"m.py": "".join(f"LINE {i} é\n" for i in range(1000))}), LIMITS)
    whole = source_diff(a, b, LIMITS.diff_bytes)
    cut = source_diff(a, b, 1000)
    assert not whole.truncated and cut.truncated
    assert len(cut.text.encode()) <= 1000 and cut.text.endswith("\n") and whole.text.startswith(cut.text)


def test_links_compare_by_their_targets(tmp_path: Path) -> None:
    a = read_sources(tar(tmp_path, "a.tar", {"s.py": "1\n"}, link=("l.py", "s.py")), LIMITS)
    same = read_sources(tar(tmp_path, "b.tar", {"s.py": "1\n"}, link=("l.py", "s.py")), LIMITS)
    other = read_sources(tar(tmp_path, "c.tar", {"s.py": "1\n", "t.py": "2\n"}, link=("l.py", "t.py")), LIMITS)
    assert source_diff(a, same, LIMITS.diff_bytes).changed == []
    assert source_diff(a, other, LIMITS.diff_bytes).skipped == ["l.py: a link to s.py"]
