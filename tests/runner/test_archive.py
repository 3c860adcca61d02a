"""Tar safety on the way in and output collection on the way out (runner.archive): real tar files and real
directories, both sides of every budget; no Docker."""

from __future__ import annotations

import errno
import io
import os
import stat
import tarfile
from pathlib import Path

import pytest

from kcoral.protocol.errors import BadRequest, InsufficientStorage, KcoralError, NotFound, PayloadTooLarge
from kcoral.runner import archive, jobfs
from kcoral.runner.archive import collect_outputs, dir_usage, extract_upload, safe_output_path
from kcoral.runner.limits import Limits


def member(
    name: str, kind: bytes = tarfile.REGTYPE, data: bytes = b"", linkname: str = "", mode: int = 0o644
) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = mode
    info.linkname = linkname
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    return info, data


def make_tar(tmp_path: Path, *members: tuple[tarfile.TarInfo, bytes]) -> Path:
    path = tmp_path / "up.tar"
    with tarfile.open(path, "w") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return path


def refusal(tmp_path: Path, *members: tuple[tarfile.TarInfo, bytes], limits: Limits | None = None) -> str:
    dest = tmp_path / "dest"
    with pytest.raises((BadRequest, PayloadTooLarge)) as exc:
        extract_upload(make_tar(tmp_path, *members), dest, limits or Limits())
    assert not dest.exists(), "nothing may be written before the whole tar is checked"
    return exc.value.message


# ----- names


@pytest.mark.parametrize(
    ("name", "clean"),
    [
        ("a", "a"),
        ("a/b", "a/b"),
        ("./a//b/", "a/b"),
        ("a/./b", "a/b"),
        (".", "."),
        ("./", "."),
        ("ab:c", "ab:c"),
        ("..a", "..a"),
        ("a..", "a.."),
        ("a/..b", "a/..b"),
    ],
)
def test_clean_names(name: str, clean: str) -> None:
    assert archive._clean_member_name(name) == clean


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("/etc/passwd", "an absolute path"),
        ("C:evil", "an absolute path"),
        ("c:", "an absolute path"),
        ("..", "a path leaving its folder ('..')"),
        ("../x", "a path leaving its folder ('..')"),
        ("a/../../x", "a path leaving its folder ('..')"),
        ("a/../b", "a path leaving its folder ('..')"),
        ("a/..", "a path leaving its folder ('..')"),  # any '..' is refused, even one that ends inside
        ("x:y", "an absolute path"),
        ("a\x00b", "a NUL byte in a name"),
    ],
)
def test_bad_names(name: str, why: str) -> None:
    with pytest.raises(BadRequest) as exc:
        archive._clean_member_name(name)
    assert exc.value.message == f"the upload has {why}: {name!r}"


@pytest.mark.parametrize(
    ("path", "target", "inside"),
    [
        ("link", "a", True),
        ("d/link", "../a", True),
        ("d/e/link", "../../a", True),
        ("link", ".", True),
        ("link", "../a", False),
        ("link", "..", False),
        ("d/link", "../..", False),
        ("d/link", "../../a", False),
        ("link", "/etc", False),
        ("link", "..a", True),
    ],
)
def test_link_targets(path: str, target: str, inside: bool) -> None:
    assert (archive._resolve(path.split("/")[:-1], target, {}) is not None) is inside


@pytest.mark.parametrize(
    ("links", "escapes"),
    [
        ({"a/y": ".", "a/x": "y/../.."}, "a/x"),  # lexically a/x -> '.', physically a/y is a, so '../..' leaves
        ({"a/y": "..", "a/x": "y/.."}, "a/x"),
        ({"l": "d/../m", "m": "../etc"}, "l"),  # a link through a link
        ({"p": "q", "q": "p"}, "p"),  # a loop
        ({"s": "s/x"}, "s"),
    ],
)
def test_links_are_resolved_physically_through_the_uploads_other_links(
    tmp_path: Path, links: dict[str, str], escapes: str
) -> None:
    members = [member("a", tarfile.DIRTYPE), member("d", tarfile.DIRTYPE)]
    members += [member(name, tarfile.SYMTYPE, linkname=target) for name, target in links.items()]
    assert refusal(tmp_path, *members).startswith(f"the upload has a link leading outside: {escapes!r}")


def test_links_through_links_that_stay_inside_are_accepted(tmp_path: Path) -> None:
    members = [member("a/b", tarfile.DIRTYPE), member("a/f", data=b"1")]
    members += [member("a/b/up", tarfile.SYMTYPE, linkname=".."), member("x", tarfile.SYMTYPE, linkname="a/b/up/f")]
    assert extract_upload(make_tar(tmp_path, *members), tmp_path / "dest", Limits()) == 1
    assert (tmp_path / "dest" / "x").read_bytes() == b"1"


@pytest.mark.parametrize("order", ["file first", "folder first"])
def test_a_name_that_is_both_a_file_and_a_folder_is_refused(tmp_path: Path, order: str) -> None:
    both = [member("a", data=b"1"), member("a/b", data=b"2")]
    assert refusal(tmp_path, *(both if order == "file first" else both[::-1])) == (
        "the upload has 'a' both as a file and as a folder"
    )


def test_names_over_the_kernels_limits_are_refused_by_length(tmp_path: Path) -> None:
    ok = "n" * 255
    assert extract_upload(make_tar(tmp_path, member(ok, data=b"1")), tmp_path / "ok", Limits()) == 1
    assert "a name over 255 bytes" in refusal(tmp_path, member("n" * 256, data=b"1"))
    assert "a name over 255 bytes" in refusal(tmp_path, member("d/" + "é" * 128, data=b"1"))  # bytes, not chars
    deep = "/".join(["d" * 200] * 16)  # 3215 bytes, each part fine
    assert refusal(tmp_path, member(deep, data=b"1")) == "the upload has a path of 3215 bytes; the limit is 3072"


# ----- extract_upload


def test_extracts_files_dirs_and_inside_links(tmp_path: Path) -> None:
    dest = tmp_path / "dest"
    tar = make_tar(
        tmp_path,
        member(".", tarfile.DIRTYPE),
        member("d", tarfile.DIRTYPE, mode=0o700),
        member("d/run.sh", data=b"#!/bin/sh\n", mode=0o700),
        member("d/data", data=b"xyz", mode=0o600),
        member("d/x", data=b"1", mode=0o010),
        member("link", tarfile.SYMTYPE, linkname="d/data"),
        member("e/f/deep", data=b"deep"),
    )
    assert extract_upload(tar, dest, Limits()) == 4
    assert (dest / "d" / "data").read_bytes() == b"xyz" and (dest / "e" / "f" / "deep").read_bytes() == b"deep"
    assert os.readlink(dest / "link") == "d/data"
    assert stat.S_IMODE(os.stat(dest / "d").st_mode) == 0o755
    assert stat.S_IMODE(os.stat(dest / "d" / "run.sh").st_mode) == 0o755
    assert stat.S_IMODE(os.stat(dest / "d" / "x").st_mode) == 0o755  # any execute bit makes it executable
    assert stat.S_IMODE(os.stat(dest / "d" / "data").st_mode) == 0o644
    assert stat.S_IMODE(os.stat(dest / "e" / "f").st_mode) == 0o755


def test_an_empty_tar_extracts_nothing(tmp_path: Path) -> None:
    assert extract_upload(make_tar(tmp_path, member(".", tarfile.DIRTYPE)), tmp_path / "dest", Limits()) == 0
    assert list((tmp_path / "dest").iterdir()) == []


def test_not_a_tar(tmp_path: Path) -> None:
    path = tmp_path / "up.tar"
    path.write_bytes(b"this is not a tar archive" * 100)
    with pytest.raises(BadRequest) as exc:
        extract_upload(path, tmp_path / "dest", Limits())
    assert exc.value.message.startswith("the upload is not a readable tar archive: ")


def test_refuses_links_leading_outside(tmp_path: Path) -> None:
    assert refusal(tmp_path, member("l", tarfile.SYMTYPE, linkname="../x")) == (
        "the upload has a link leading outside: 'l' -> '../x'"
    )


def test_refuses_hard_links(tmp_path: Path) -> None:
    assert refusal(tmp_path, member("a", data=b"1"), member("h", tarfile.LNKTYPE, linkname="a")) == (
        "the upload has a hard link ('h'); send a copy of the file instead"
    )


@pytest.mark.parametrize("kind", [tarfile.FIFOTYPE, tarfile.CHRTYPE, tarfile.BLKTYPE])
def test_refuses_special_files(tmp_path: Path, kind: bytes) -> None:
    assert refusal(tmp_path, member("dev", kind)) == "the upload has a device, FIFO or other special file: 'dev'"


def test_refuses_absolute_members(tmp_path: Path) -> None:
    assert refusal(tmp_path, member("/abs", data=b"1")) == "the upload has an absolute path: '/abs'"


@pytest.mark.parametrize("second", ["a", "./a", "a/"])
def test_refuses_a_name_given_twice(tmp_path: Path, second: str) -> None:
    assert refusal(tmp_path, member("a", data=b"1"), member(second, data=b"2")) == "the upload names 'a' twice"


@pytest.mark.parametrize("through", ["l/x", "l/y/z"])
def test_refuses_writing_through_a_link(tmp_path: Path, through: str) -> None:
    assert (
        refusal(
            tmp_path,
            member("d", tarfile.DIRTYPE),
            member("l", tarfile.SYMTYPE, linkname="d"),
            member(through, data=b"1"),
        )
        == f"the upload writes {through!r} through a symbolic link"
    )


def test_a_link_named_like_a_prefix_is_not_a_parent(tmp_path: Path) -> None:
    tar = make_tar(tmp_path, member("l", tarfile.SYMTYPE, linkname="lx"), member("lx/y", data=b"1"))
    assert extract_upload(tar, tmp_path / "dest", Limits()) == 1


def test_entry_budget_both_sides(tmp_path: Path) -> None:
    entries = [member("d", tarfile.DIRTYPE), member("d/a", data=b"1"), member("l", tarfile.SYMTYPE, linkname="d")]
    assert extract_upload(make_tar(tmp_path, *entries), tmp_path / "ok", Limits(upload_files=3)) == 1
    assert refusal(tmp_path, *entries, limits=Limits(upload_files=2)) == "the upload has more than 2 entries"


def test_unpacked_byte_budget_both_sides(tmp_path: Path) -> None:
    entries = [member("a", data=b"x" * 6), member("d", tarfile.DIRTYPE), member("b", data=b"y" * 4)]
    assert extract_upload(make_tar(tmp_path, *entries), tmp_path / "ok", Limits(unpacked_bytes=10)) == 2
    assert refusal(tmp_path, *entries, limits=Limits(unpacked_bytes=9)) == "the upload unpacks to more than 9 bytes"


# ----- dir_usage


def test_dir_usage_counts_allocation_or_size(tmp_path: Path) -> None:
    (tmp_path / "sparse").touch()
    os.truncate(tmp_path / "sparse", 10 << 20)
    (tmp_path / "small").write_bytes(b"x")
    (tmp_path / "sub").mkdir()
    (tmp_path / "link").symlink_to("/etc/passwd")
    st = {n: os.lstat(tmp_path / n) for n in ("sparse", "small", "sub", "link")}
    assert st["sparse"].st_blocks * 512 < (10 << 20) and st["small"].st_blocks * 512 > 1
    usage = dir_usage(tmp_path, 100, 64)
    # a regular file counts its size or its allocation, whichever is larger; anything else its allocation
    expected = (10 << 20) + st["small"].st_blocks * 512 + st["sub"].st_blocks * 512 + st["link"].st_blocks * 512
    assert (usage.bytes, usage.entries) == (expected, 4)


def test_dir_usage_stops_one_past_the_limit(tmp_path: Path) -> None:
    for i in range(6):
        (tmp_path / f"f{i}").write_bytes(b"")
    assert dir_usage(tmp_path, 2, 64).entries == 3
    assert dir_usage(tmp_path, 6, 64).entries == 6
    assert dir_usage(tmp_path / "missing", 6, 64) == archive.DirUsage(0, 0)


# ----- collect_outputs


def test_collect_outputs_copies_with_digests(tmp_path: Path) -> None:
    raw, dest = tmp_path / "raw", tmp_path / "dest"
    (raw / "d").mkdir(parents=True)
    (raw / "d" / "a.bin").write_bytes(b"abc")
    (raw / "b.txt").write_bytes(b"")
    got = collect_outputs(raw, dest, Limits())
    assert [(f.path, f.size, f.sha256) for f in got.files] == [
        ("b.txt", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("d/a.bin", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
    ]
    assert got.refused == [] and (dest / "d" / "a.bin").read_bytes() == b"abc"


def test_collect_outputs_file_budget_both_sides(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    for name in ("a", "b", "c"):
        (raw / name).write_text(name)
    got = collect_outputs(raw, tmp_path / "d2", Limits(output_files=2))
    assert [f.path for f in got.files] == ["a", "b"] and got.refused == ["c: over the 2-file output budget"]
    assert got.over_budget
    within = collect_outputs(raw, tmp_path / "d3", Limits(output_files=3))
    assert [f.path for f in within.files] == ["a", "b", "c"] and not within.over_budget


def test_collect_outputs_byte_budget_both_sides(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "a").write_bytes(b"x" * 6)
    (raw / "b").write_bytes(b"y" * 4)
    (raw / "c").write_bytes(b"z")
    got = collect_outputs(raw, tmp_path / "d1", Limits(output_bytes=10))
    assert [f.path for f in got.files] == ["a", "b"]
    assert got.refused == ["c: 1 bytes is over the remaining output budget"]
    got = collect_outputs(raw, tmp_path / "d2", Limits(output_bytes=9))
    assert [f.path for f in got.files] == ["a", "c"]
    assert got.refused == ["b: 4 bytes is over the remaining output budget"] and got.over_budget


def test_collect_outputs_walks_up_to_four_entries_per_file(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    for i in range(9):
        (raw / f"f{i}").write_text("x")
    got = collect_outputs(raw, tmp_path / "dest", Limits(output_files=2))
    # the walk stops after 2 * 4 entries: f8 is never seen
    assert len(got.files) == 2 and len(got.refused) == 6


def test_collect_outputs_of_a_missing_folder(tmp_path: Path) -> None:
    got = collect_outputs(tmp_path / "missing", tmp_path / "dest", Limits())
    assert got.files == [] and got.refused == [] and (tmp_path / "dest").is_dir()


def test_collect_outputs_refuses_a_file_that_cannot_be_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "a").write_text("1")
    (raw / "b").write_text("2")
    real_open = jobfs.open_file

    def refuse_a(dir_fd: int, rel: str) -> int:
        if rel == "a":
            raise jobfs.UnsafeFile("swapped")
        return real_open(dir_fd, rel)

    monkeypatch.setattr(archive.jobfs, "open_file", refuse_a)
    got = collect_outputs(raw, tmp_path / "dest", Limits())
    assert [f.path for f in got.files] == ["b"] and got.refused == ["a: could not be read safely"]


def test_collect_outputs_stops_a_file_that_grew_past_the_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw, dest = tmp_path / "raw", tmp_path / "dest"
    raw.mkdir()
    (raw / "a").write_bytes(b"x" * 11)
    (raw / "b").write_bytes(b"y" * 10)
    real_walk = jobfs.walk

    def stale_walk(root: Path, max_entries: int, max_depth: int) -> list[jobfs.Entry]:
        # the sizes as they were when the walk saw them: the job wrote more before the copy
        return [jobfs.Entry(e.rel, e.mode, 5, e.blocks) for e in real_walk(root, max_entries, max_depth)]

    monkeypatch.setattr(archive.jobfs, "walk", stale_walk)
    got = collect_outputs(raw, dest, Limits(output_bytes=10))
    assert [(f.path, f.size) for f in got.files] == [("b", 10)]
    assert got.refused == ["a: could not be read safely"] and not (dest / "a").exists()


def test_copy_of_exactly_the_budget(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"x" * (archive._CHUNK + 1))
    with jobfs.open_dir(tmp_path) as fd:
        assert archive._copy_nofollow(fd, "f", tmp_path / "out" / "f", archive._CHUNK + 1)[0] == archive._CHUNK + 1
        assert archive._copy_nofollow(fd, "f", tmp_path / "out" / "g", archive._CHUNK) is None
    assert archive._CHUNK == 1 << 20
    assert (tmp_path / "out" / "f").stat().st_size == archive._CHUNK + 1 and not (tmp_path / "out" / "g").exists()


# ----- safe_output_path


def test_safe_output_path(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "d" / "f")
    assert safe_output_path(tmp_path, "d/f") == tmp_path / "d" / "f"
    assert safe_output_path(tmp_path, "./d//f") == tmp_path / "d" / "f"
    for rel in (".", "d", "missing", "link"):
        with pytest.raises(NotFound) as exc:
            safe_output_path(tmp_path, rel)
        assert exc.value.message == f"no output file named {rel!r}"
    with pytest.raises(BadRequest) as bad:
        safe_output_path(tmp_path, "../d/f")
    assert bad.value.message == "bad output path '../d/f': a path leaving its folder ('..')"


# ----- the folders the extraction and the copy create


def test_extract_into_a_new_nested_or_an_existing_folder(tmp_path: Path) -> None:
    tar = make_tar(tmp_path, member("d/f", data=b"1"), member("d", tarfile.DIRTYPE))  # the folder after its file
    assert extract_upload(tar, tmp_path / "new" / "deeper" / "dest", Limits()) == 1
    (tmp_path / "existing").mkdir()
    assert extract_upload(tar, tmp_path / "existing", Limits()) == 1
    assert (tmp_path / "existing" / "d" / "f").read_bytes() == b"1"


def test_other_execute_bit_alone_makes_a_file_executable(tmp_path: Path) -> None:
    tar = make_tar(tmp_path, member("x", data=b"1", mode=0o001))
    extract_upload(tar, tmp_path / "dest", Limits())
    assert stat.S_IMODE(os.stat(tmp_path / "dest" / "x").st_mode) == 0o755


def test_the_top_folder_entry_is_not_counted(tmp_path: Path) -> None:
    tar = make_tar(tmp_path, member(".", tarfile.DIRTYPE), member("a", data=b"1"), member("b", data=b"2"))
    assert extract_upload(tar, tmp_path / "dest", Limits(upload_files=2)) == 2


def test_refuses_writing_through_a_nested_link(tmp_path: Path) -> None:
    assert (
        refusal(
            tmp_path,
            member("d/e", tarfile.DIRTYPE),
            member("d/l", tarfile.SYMTYPE, linkname="e"),
            member("d/l/x", data=b"1"),
        )
        == "the upload writes 'd/l/x' through a symbolic link"
    )


def test_collect_into_a_new_nested_or_an_existing_folder(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    (raw / "d" / "e").mkdir(parents=True)
    (raw / "d" / "e" / "f").write_text("x")
    got = collect_outputs(raw, tmp_path / "new" / "dest", Limits())
    assert [f.path for f in got.files] == ["d/e/f"] and (tmp_path / "new" / "dest" / "d" / "e" / "f").exists()
    (tmp_path / "existing").mkdir()
    assert [f.path for f in collect_outputs(raw, tmp_path / "existing", Limits()).files] == ["d/e/f"]


def test_a_name_with_a_control_character_is_refused_and_shown_escaped(tmp_path: Path) -> None:
    """A job chose the name: an escape sequence in it must not reach the user's terminal or disk."""
    raw, dest = tmp_path / "raw", tmp_path / "dest"
    raw.mkdir()
    (raw / "ok\x1b[31mred.txt").write_text("x")
    os.symlink("/etc/passwd", raw / "\x1b]0;pwned\x07link")
    (raw / "report\u202etxt.exe").write_text("z")  # drawn as "reportexe.txt"
    (raw / "plain.txt").write_text("y")
    collected = archive.collect_outputs(raw, dest, Limits())
    assert [f.path for f in collected.files] == ["plain.txt"]
    assert sorted(collected.refused) == [
        "\\x1b]0;pwned\\x07link: a control character in its name",
        "ok\\x1b[31mred.txt: a control character in its name",
        "report\\u202etxt.exe: a control character in its name",
    ]
    assert sorted(p.name for p in dest.iterdir()) == ["plain.txt"]


# ----- lengths, link resolution and the write errors, at their edges


def test_the_path_limit_is_exactly_3072_bytes(tmp_path: Path) -> None:
    exact = "/".join(["d" * 254] * 12) + "/" + "f" * 23  # 12 * 255 + 23 - ... = 3072 bytes
    exact = exact[: 3072 - 1] + "g"
    assert len(exact.encode()) == 3072
    assert extract_upload(make_tar(tmp_path, member(exact, data=b"1")), tmp_path / "ok", Limits()) == 1
    assert refusal(tmp_path, member(exact + "h", data=b"1")) == "the upload has a path of 3073 bytes; the limit is 3072"


def test_a_long_path_of_short_names_is_fine_and_a_long_name_is_named(tmp_path: Path) -> None:
    deep = "/".join(["abc"] * 100)  # 399 bytes, every part short
    assert extract_upload(make_tar(tmp_path, member(deep, data=b"1")), tmp_path / "ok", Limits()) == 1
    name = "d/" + "n" * 300
    assert refusal(tmp_path, member(name, data=b"1")) == f"the upload has a name over 255 bytes in {name[:80]!r}..."


def test_a_name_that_is_not_utf8_is_kept_byte_for_byte(tmp_path: Path) -> None:
    raw = tmp_path / "raw.tar"
    with tarfile.open(raw, "w", format=tarfile.GNU_FORMAT, encoding="latin-1") as tar:
        info = tarfile.TarInfo("caf\xe9")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"1"))
    assert extract_upload(raw, tmp_path / "dest", Limits()) == 1
    assert os.listdir(os.fsencode(tmp_path / "dest")) == [b"caf\xe9"]


@pytest.mark.parametrize(
    ("target", "inside"),
    [
        ("./../x", False),
        ("a//b", True),
        ("./d/../../x", False),
        (".//./x", True),
        ("d/./..", True),
        ("d//../..", False),
    ],
)
def test_empty_and_dot_parts_of_a_target_are_skipped_not_the_end(tmp_path: Path, target: str, inside: bool) -> None:
    members = [member("d", tarfile.DIRTYPE), member("l", tarfile.SYMTYPE, linkname=target)]
    if inside:
        assert extract_upload(make_tar(tmp_path, *members), tmp_path / "ok", Limits()) == 0
    else:
        assert refusal(tmp_path, *members).startswith("the upload has a link leading outside: 'l'")


def chain(length: int) -> list[tuple[tarfile.TarInfo, bytes]]:
    """l0 -> l1 -> ... -> l{length-1} -> d: following l0 takes ``length`` hops."""
    links = [member(f"l{i}", tarfile.SYMTYPE, linkname=f"l{i + 1}") for i in range(length - 1)]
    return [member("d", tarfile.DIRTYPE), *links, member(f"l{length - 1}", tarfile.SYMTYPE, linkname="d")]


def test_a_chain_of_40_links_is_followed_and_41_is_a_loop(tmp_path: Path) -> None:
    assert extract_upload(make_tar(tmp_path, *chain(40), member("x", tarfile.SYMTYPE, linkname="l0/f")),
                          tmp_path / "ok", Limits()) == 0  # fmt: skip
    assert archive._resolve([], "l0/f", {f"l{i}": f"l{i + 1}" for i in range(40)} | {"l40": "d"}) is None
    assert archive._resolve([], "l1/f", {f"l{i}": f"l{i + 1}" for i in range(40)} | {"l40": "d"}) == ["d", "f"]


def test_a_link_met_on_the_way_resolves_from_its_own_folder(tmp_path: Path) -> None:
    """m -> d/e/l/y goes through d/e/l -> ../../x, which is 'x' seen from d/e: inside."""
    members = [member("d/e", tarfile.DIRTYPE), member("d/e/l", tarfile.SYMTYPE, linkname="../../x"),
               member("m", tarfile.SYMTYPE, linkname="d/e/l/y")]  # fmt: skip
    assert extract_upload(make_tar(tmp_path, *members), tmp_path / "ok", Limits()) == 0
    assert archive._resolve([], "d/e/l/y", {"d/e/l": "../../x"}) == ["x", "y"]


def test_a_file_that_pax_says_is_huge_is_refused_by_its_real_size(tmp_path: Path) -> None:
    """PAX may override the header's size field; the member check counts what tarfile will read."""
    info, _ = member("big", data=b"1")
    info.pax_headers = {"size": str(3 << 30)}
    path = tmp_path / "up.tar"
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tar:
        tar.addfile(info, io.BytesIO(b"1"))
    with pytest.raises(PayloadTooLarge) as exc:
        extract_upload(path, tmp_path / "dest", Limits(unpacked_bytes=1 << 30))
    assert exc.value.message == f"the upload unpacks to more than {1 << 30} bytes"


def test_a_full_disk_while_unpacking_is_insufficient_storage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full(*args: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(archive, "_extract_one", full)
    with pytest.raises(InsufficientStorage) as exc:
        extract_upload(make_tar(tmp_path, member("a", data=b"1")), tmp_path / "dest", Limits())
    assert exc.value.message == "the server's disk is full: cannot unpack the upload"


def test_a_tar_the_scan_passes_but_tarfile_cannot_read_is_a_400(tmp_path: Path) -> None:
    """A header whose checksum and size are right but whose mode field is not a number."""
    data = bytearray(make_tar(tmp_path, member("a", data=b"1")).read_bytes())
    data[100:108] = b"zzzzzzz\0"  # the mode field
    data[148:156] = b" " * 8
    data[148:156] = b"%06o\0 " % sum(data[:512])
    path = tmp_path / "bad.tar"
    path.write_bytes(bytes(data))
    with pytest.raises(BadRequest) as exc:
        extract_upload(path, tmp_path / "dest", Limits())
    assert exc.value.message.startswith("the upload is not a readable tar archive: ")
    assert "checksum" not in exc.value.message  # tarfile's refusal, not the scan's


def test_extraction_never_writes_through_a_link_already_in_the_folder(tmp_path: Path) -> None:
    """The member checks keep links out of the upload; O_EXCL|O_NOFOLLOW keep out one that is there."""
    outside = tmp_path / "outside"
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "a").symlink_to(outside)
    with pytest.raises(KcoralError):
        extract_upload(make_tar(tmp_path, member("a", data=b"evil")), dest, Limits())
    assert not outside.exists()


def test_a_refused_entry_does_not_stop_the_collection(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "a-link").symlink_to("/etc/passwd")
    (raw / "b.txt").write_text("b")
    got = collect_outputs(raw, tmp_path / "dest", Limits())
    assert [f.path for f in got.files] == ["b.txt"]
    assert got.refused == ["a-link: not a regular file (link, FIFO, socket or device)"]
