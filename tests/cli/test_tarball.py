"""cli.tarball: deterministic bytes, normalised metadata, refusal of what cannot be sent."""

from __future__ import annotations

import os
import socket
import tarfile
from pathlib import Path

import pytest

from kcoral.cli.tarball import build_tarball
from kcoral.protocol.errors import InputError


def make_tree(root: Path) -> Path:
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "empty").mkdir()
    (root / "main.py").write_text("print('hi')\n")
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "sub" / "data.bin").write_bytes(bytes(range(256)) * 10)
    run = root / "run.sh"
    run.write_text("#!/bin/sh\n")
    run.chmod(0o700)
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    return root


def members(path: Path) -> list[tarfile.TarInfo]:
    with tarfile.open(path) as tar:
        return tar.getmembers()


def test_same_directory_twice_gives_same_sha256(tmp_path: Path) -> None:
    src = make_tree(tmp_path / "src")
    a, b = build_tarball(src), build_tarball(src)
    try:
        assert a.sha256 == b.sha256
        assert a.path.read_bytes() == b.path.read_bytes()
        assert a.size == a.path.stat().st_size
    finally:
        a.remove()
        b.remove()


def test_mtimes_and_permissions_noise_do_not_change_sha256(tmp_path: Path) -> None:
    src = make_tree(tmp_path / "src")
    first = build_tarball(src)
    for p in [src, *src.rglob("*")]:
        os.utime(p, (1_000_000, 1_000_000))
    (src / "main.py").chmod(0o600)  # still "not executable": 0o644 in the tar
    second = build_tarball(src)
    try:
        assert first.sha256 == second.sha256
    finally:
        first.remove()
        second.remove()


def test_same_content_in_another_directory_gives_same_sha256(tmp_path: Path) -> None:
    a = build_tarball(make_tree(tmp_path / "a"))
    b = build_tarball(make_tree(tmp_path / "b"))
    try:
        assert a.sha256 == b.sha256
    finally:
        a.remove()
        b.remove()


def test_content_change_changes_sha256(tmp_path: Path) -> None:
    src = make_tree(tmp_path / "src")
    first = build_tarball(src)
    (src / "main.py").write_text("print('bye')\n")
    second = build_tarball(src)
    try:
        assert first.sha256 != second.sha256
    finally:
        first.remove()
        second.remove()


def test_metadata_is_normalised_and_all_but_the_default_excludes_are_included(tmp_path: Path) -> None:
    src = make_tree(tmp_path / "src")
    tb = build_tarball(src)
    try:
        infos = members(tb.path)
        names = [i.name for i in infos]
        assert names == [
            "empty", "main.py", "pkg", "pkg/__init__.py", "pkg/sub", "pkg/sub/data.bin", "run.sh",
        ]  # fmt: skip
        assert tb.skipped == (".git/",)
        for info in infos:
            assert (info.mtime, info.uid, info.gid, info.uname, info.gname) == (0, 0, 0, "", "")
            assert info.isdir() or info.isfile()
        modes = {i.name: i.mode for i in infos}
        assert modes["run.sh"] == 0o755 and modes["main.py"] == 0o644 and modes["pkg"] == 0o755
        assert tb.files == 4 and tb.dirs == 3
        assert tb.content_bytes == sum(i.size for i in infos if i.isfile())
    finally:
        tb.remove()


def test_symlink_inside_is_stored_as_its_target(tmp_path: Path) -> None:
    src = make_tree(tmp_path / "src")
    (src / "link.py").symlink_to("main.py")
    (src / "pkglink").symlink_to("pkg")
    tb = build_tarball(src)
    try:
        with tarfile.open(tb.path) as tar:
            link = tar.getmember("link.py")
            assert link.isfile()
            assert tar.extractfile(link).read() == b"print('hi')\n"  # type: ignore[union-attr]
            assert tar.getmember("pkglink").isdir()
            assert tar.getmember("pkglink/sub/data.bin").isfile()
    finally:
        tb.remove()


def test_symlink_pointing_outside_is_refused(tmp_path: Path) -> None:
    src = make_tree(tmp_path / "src")
    (tmp_path / "secret.txt").write_text("no")
    (src / "leak.txt").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(InputError, match=r"leak\.txt.*outside"):
        build_tarball(src)


def test_relative_symlink_escaping_with_dotdot_is_refused(tmp_path: Path) -> None:
    src = make_tree(tmp_path / "src")
    (src / "pkg" / "up").symlink_to("../..")
    with pytest.raises(InputError, match="outside"):
        build_tarball(src)


def test_dangling_symlink_is_refused(tmp_path: Path) -> None:
    src = make_tree(tmp_path / "src")
    (src / "gone").symlink_to("nowhere")
    with pytest.raises(InputError, match="dangling"):
        build_tarball(src)


def test_symlink_loop_is_refused(tmp_path: Path) -> None:
    src = make_tree(tmp_path / "src")
    (src / "pkg" / "again").symlink_to("..")
    with pytest.raises(InputError, match="loop"):
        build_tarball(src)


def test_fifo_is_refused(tmp_path: Path) -> None:
    src = make_tree(tmp_path / "src")
    os.mkfifo(src / "pkg" / "pipe")
    with pytest.raises(InputError, match=r"pipe.*FIFO"):
        build_tarball(src)


def test_socket_is_refused(tmp_path: Path) -> None:
    src = make_tree(tmp_path / "src")
    sock = socket.socket(socket.AF_UNIX)
    path = src / "s"
    try:
        sock.bind(str(path))
    except OSError:
        pytest.skip("cannot bind a unix socket here")
    try:
        with pytest.raises(InputError, match="socket"):
            build_tarball(src)
    finally:
        sock.close()


def test_refusal_leaves_no_temp_file(tmp_path: Path) -> None:
    src = make_tree(tmp_path / "src")
    os.mkfifo(src / "pipe")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    with pytest.raises(InputError):
        build_tarball(src, tmp_dir=tmp)
    assert list(tmp.iterdir()) == []


def test_not_a_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a directory"):
        build_tarball(tmp_path / "missing")


def test_default_excludes_and_kcoralignore_decide_what_is_sent(tmp_path: Path) -> None:
    src = tmp_path / "src"
    for rel in (
        ".venv/bin/python",
        "pkg/__pycache__/m.cpython-311.pyc",
        "pkg/m.py",
        "stale.pyc",
        "kcoral-out/j/o.txt",
        "sub/kcoral-out/kept.txt",
        "data/big.bin",
        "data/keep.bin",
        "notes.md",
        ".git/HEAD",
    ):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_bytes(b"x" * (1000 if rel == "data/big.bin" else 10))
    (src / ".venv" / "lib").symlink_to("/usr/lib")  # a venv's links lead outside: it must not fail the upload
    (src / ".kcoralignore").write_text("# comments and blanks are fine\n\ndata/*\n!data/keep.bin\n*.md\n!.git/\n")
    tb = build_tarball(src)
    try:
        names = {i.name for i in members(tb.path) if i.isfile()}
        assert names == {".kcoralignore", "pkg/m.py", "sub/kcoral-out/kept.txt", "data/keep.bin", ".git/HEAD"}
        assert set(tb.skipped) == {".venv/", "pkg/__pycache__/", "stale.pyc", "kcoral-out/", "data/big.bin", "notes.md"}
        assert tb.largest[0] == (".kcoralignore", len((src / ".kcoralignore").read_bytes()))
    finally:
        tb.remove()


def test_the_default_excludes_without_a_kcoralignore_answer_as_pathspec_does() -> None:
    """Without a .kcoralignore the client does not import pathspec: its plain tests must leave out
    exactly what DEFAULT_EXCLUDES' gitignore lines leave out, at every depth, for files and folders."""
    import itertools

    import pathspec

    from kcoral.cli.tarball import DEFAULT_EXCLUDES, exclusions

    spec = pathspec.GitIgnoreSpec.from_lines(DEFAULT_EXCLUDES)
    plain = exclusions(Path("/nonexistent-kcoral-dir"))
    names = [".git", ".venv", "venv", "__pycache__", ".mypy_cache", ".pytest_cache", "kcoral-out", "a.pyc",
             ".pyc", "x.py", "git", "venvs", ".gitignore", "kcoral-outs", "a.pyc.bak", "pyc", "sub.pyc"]  # fmt: skip
    checked = 0
    for depth in range(3):
        for prefix in itertools.product(["d", "kcoral-out", "venv-x"], repeat=depth):
            for name in names:
                for suffix in ("/", ""):
                    path = "/".join([*prefix, name]) + suffix
                    assert plain.match_file(path) == spec.match_file(path), path
                    checked += 1
    assert checked > 400
