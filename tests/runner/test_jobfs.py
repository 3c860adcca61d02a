"""Reading job folders without following links or blocking (runner.jobfs), and the output walk and
copy built on it (runner.archive): real files, links, FIFOs; no Docker."""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
from pathlib import Path

import pytest

from kcoral.runner import jobfs
from kcoral.runner.archive import collect_outputs, dir_usage
from kcoral.runner.limits import Limits


def test_reads_a_regular_file(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "r.json").write_text("{}")
    assert jobfs.read_file(tmp_path, "a/r.json", 10) == b"{}"


@pytest.mark.parametrize("make", ["link_file", "link_dir", "fifo", "dir", "missing", "over_cap"])
def test_refuses_what_is_not_a_regular_file_inside(tmp_path: Path, make: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "r.json").write_text("secret")
    root = tmp_path / "root"
    root.mkdir()
    if make == "link_file":
        (root / "r.json").symlink_to(outside / "r.json")
    elif make == "link_dir":
        (root / "sub").symlink_to(outside)
    elif make == "fifo":
        os.mkfifo(root / "r.json")
    elif make == "dir":
        (root / "r.json").mkdir()
    elif make == "over_cap":
        (root / "r.json").write_bytes(b"x" * 11)
    rel = "sub/r.json" if make == "link_dir" else "r.json"
    done = threading.Event()

    def read() -> None:
        with pytest.raises(jobfs.UnsafeFile):
            jobfs.read_file(root, rel, 10)
        done.set()

    t = threading.Thread(target=read, daemon=True)
    t.start()
    assert done.wait(5), "the read blocked"  # a FIFO must never block the server


def test_root_itself_may_not_be_a_link(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "r").write_text("x")
    (tmp_path / "root").symlink_to(tmp_path / "real")
    with pytest.raises(jobfs.UnsafeFile):
        jobfs.read_file(tmp_path / "root", "r", 10)


def test_walk_never_follows_and_stops_at_depth(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    for i in range(5):
        (outside / f"f{i}").write_bytes(b"x" * 1000)
    root = tmp_path / "root"
    root.mkdir()
    (root / "link").symlink_to(outside)
    deep = root
    for _ in range(100):
        deep = deep / "d"
    deep.mkdir(parents=True)
    rels = [e.rel for e in jobfs.walk(root, 10_000, max_depth=20)]
    assert "link" in rels and not any(r.startswith("link/") for r in rels)
    assert max(r.count("/") for r in rels) < 20
    before = dir_usage(root, 10_000, 64)
    (outside / "big").write_bytes(b"x" * (1 << 20))
    assert dir_usage(root, 10_000, 64) == before  # what the link leads to is never counted


def test_collect_outputs_refuses_links_and_fifos(tmp_path: Path) -> None:
    raw, dest = tmp_path / "raw", tmp_path / "dest"
    (raw / "sub").mkdir(parents=True)
    (raw / "ok.txt").write_text("fine")
    (raw / "sub" / "deep.txt").write_text("also")
    (raw / "passwd").symlink_to("/etc/passwd")
    os.mkfifo(raw / "pipe")
    (raw / "linkdir").symlink_to("/etc")
    got = collect_outputs(raw, dest, Limits())
    assert sorted(f.path for f in got.files) == ["ok.txt", "sub/deep.txt"]
    assert sorted(r.split(":")[0] for r in got.refused) == ["linkdir", "passwd", "pipe"]
    assert (dest / "ok.txt").read_text() == "fine" and not (dest / "passwd").exists()


# ----- exact refusals, the byte cap on both sides, and the walk's limits


def test_read_file_cap_both_sides(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"x" * 10)
    assert jobfs.read_file(tmp_path, "f", 10) == b"x" * 10
    with pytest.raises(jobfs.UnsafeFile) as exc:
        jobfs.read_file(tmp_path, "f", 9)
    assert str(exc.value) == "f: over 9 bytes"


@pytest.mark.parametrize(
    ("rel", "message"),
    [
        ("a//f", "a//f: bad path component ''"),
        ("./f", "./f: bad path component '.'"),
        ("a/../f", "a/../f: bad path component '..'"),
        ("a/", "bad file name 'a/'"),
        ("a/.", "bad file name 'a/.'"),
        ("a/..", "bad file name 'a/..'"),
        ("", "bad file name ''"),
        ("missing/f", "missing/f: No such file or directory"),
        ("a/missing", "a/missing: No such file or directory"),
        ("a", "a: not a regular file"),
        ("f/x", "f/x: Not a directory"),
    ],
)
def test_open_file_refusals(tmp_path: Path, rel: str, message: str) -> None:
    (tmp_path / "a" / "a").mkdir(parents=True)
    (tmp_path / "a" / "f").write_text("x")
    (tmp_path / "f").write_text("x")
    with jobfs.open_dir(tmp_path) as fd, pytest.raises(jobfs.UnsafeFile) as exc:
        jobfs.open_file(fd, rel)
    assert str(exc.value) == message


def test_descend_refuses_a_slash_in_a_component(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    with jobfs.open_dir(tmp_path) as fd, pytest.raises(jobfs.UnsafeFile, match="bad path component 'a/b'"):
        jobfs._descend(fd, ["a/b"])


def test_open_file_leaks_no_descriptor(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f").write_text("x")
    before = len(os.listdir("/proc/self/fd"))
    with jobfs.open_dir(tmp_path) as fd:
        for rel in ("a/f", "a", "a/missing", "a//f", "missing/f"):
            with contextlib.suppress(jobfs.UnsafeFile):
                os.close(jobfs.open_file(fd, rel))
    assert len(os.listdir("/proc/self/fd")) == before


def test_read_file_of_a_missing_root(tmp_path: Path) -> None:
    with pytest.raises(jobfs.UnsafeFile) as exc:
        jobfs.read_file(tmp_path / "none", "f", 10)
    assert str(exc.value) == f"{tmp_path / 'none'}: No such file or directory"


def test_walk_entries_are_breadth_first_and_exact(tmp_path: Path) -> None:
    (tmp_path / "b" / "c").mkdir(parents=True)
    (tmp_path / "b" / "c" / "deep").write_bytes(b"123")
    (tmp_path / "a").write_bytes(b"12345")
    (tmp_path / "b" / "z").write_bytes(b"")
    entries = list(jobfs.walk(tmp_path, 100))
    assert [e.rel for e in entries] == ["a", "b", "b/c", "b/z", "b/c/deep"]
    a = entries[0]
    st = os.lstat(tmp_path / "a")
    assert (a.mode, a.size, a.blocks) == (st.st_mode, 5, st.st_blocks)


def test_walk_entry_limit_both_sides(tmp_path: Path) -> None:
    for i in range(3):
        (tmp_path / f"f{i}").write_text("x")
    assert len(list(jobfs.walk(tmp_path, 3))) == 3
    assert [e.rel for e in jobfs.walk(tmp_path, 2)] == ["f0", "f1"]
    assert list(jobfs.walk(tmp_path, 0)) == []


def test_walk_depth_limit_exact(tmp_path: Path) -> None:
    deep = tmp_path
    for _ in range(70):
        deep = deep / "d"
    deep.mkdir(parents=True)
    # depth d lists the entries d + 1 components deep: max_depth levels in all
    assert max(e.rel.count("/") for e in jobfs.walk(tmp_path, 10_000)) == 63
    assert max(e.rel.count("/") for e in jobfs.walk(tmp_path, 10_000, max_depth=2)) == 1
    assert max(e.rel.count("/") for e in jobfs.walk(tmp_path, 10_000, max_depth=1)) == 0


def test_walk_of_a_missing_root_is_empty(tmp_path: Path) -> None:
    assert list(jobfs.walk(tmp_path / "missing", 10)) == []


def test_walk_stopped_early_leaks_no_descriptor(tmp_path: Path) -> None:
    for d in ("a", "b", "c"):
        (tmp_path / d / "x").mkdir(parents=True)
    before = len(os.listdir("/proc/self/fd"))
    assert len(list(jobfs.walk(tmp_path, 4))) == 4
    walker = jobfs.walk(tmp_path, 100)
    next(walker)
    walker.close()
    assert len(os.listdir("/proc/self/fd")) == before


def _nest(root: Path, depth: int) -> None:
    """``depth`` folders inside one another below ``root``, each with a file (fd-relative: the
    path is longer than PATH_MAX)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
        os.close(os.open("f", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd))
    os.close(fd)


def test_remove_tree_removes_a_chain_deeper_than_recursion_allows(tmp_path: Path) -> None:
    root = tmp_path / "out"
    root.mkdir()
    _nest(root, 1500)
    with pytest.raises(RecursionError):
        shutil.rmtree(root)  # what the server used, and what a job made it meet
    jobfs.remove_tree(root)
    assert not root.exists()


def test_remove_tree_never_follows_links_and_takes_what_it_is_given(tmp_path: Path) -> None:
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / "precious").write_text("x")
    root = tmp_path / "out"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "f").write_text("1")
    (root / "a" / "link").symlink_to(keep)
    (root / "to-file").symlink_to(keep / "precious")
    os.chmod(root / "a" / "b", 0)  # the job's own modes do not stop the server (root) removing it
    jobfs.remove_tree(root)
    assert not root.exists() and (keep / "precious").read_text() == "x"
    link = tmp_path / "link-root"
    link.symlink_to(keep)
    jobfs.remove_tree(link)  # a link in place of the folder: the link goes, not what it leads to
    assert not link.is_symlink() and (keep / "precious").exists()
    jobfs.remove_tree(tmp_path / "missing")


def test_dir_usage_says_when_a_folder_is_nested_past_the_depth_limit(tmp_path: Path) -> None:
    _nest(tmp_path, 5)
    assert not dir_usage(tmp_path, 100, 6).too_deep
    usage = dir_usage(tmp_path, 100, 5)
    assert usage.too_deep and usage.entries == 9  # the fifth folder is seen, not what is inside it
