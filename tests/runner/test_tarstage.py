"""runner.tarstage: files staged while an upload arrives are the very bytes ``tarfile`` extracts, or
are not used; whatever the tar holds, the unpacked tree is the one the copying path makes."""

from __future__ import annotations

import gzip
import io
import os
import random
import tarfile
from pathlib import Path

import pytest

from kcoral.runner.archive import extract_upload
from kcoral.runner.limits import Limits
from kcoral.runner.tarstage import TarStager


def tree(root: Path) -> dict[str, tuple[int, bytes | str]]:
    found: dict[str, tuple[int, bytes | str]] = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if path.is_symlink():
            found[rel] = (0, os.readlink(path))
        elif path.is_file():
            found[rel] = (path.stat().st_mode & 0o777, path.read_bytes())
        else:
            found[rel] = (path.stat().st_mode & 0o777, b"<dir>")
    return found


def add(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644, **pax: str) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.pax_headers = len(data), mode, pax
    tar.addfile(info, io.BytesIO(data))


def make(fmt: int, rng: random.Random) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tar:
        add(tar, "small.txt", b"hi\n")
        add(tar, "d/" + "long" * 40 + ".bin", rng.randbytes(3000), 0o755)  # a long name: PAX or GNU header
        add(tar, "d/exact.bin", rng.randbytes(4096))  # a multiple of the block size
        add(tar, "d/empty", b"")
        add(tar, "big.bin", rng.randbytes(70_001))
        add(tar, "ünïcode.bin", rng.randbytes(5000))
        link = tarfile.TarInfo("d/link")
        link.type, link.linkname = tarfile.SYMTYPE, "exact.bin"
        tar.addfile(link)
    return buf.getvalue()


def stage(data: bytes, folder: Path, rng: random.Random) -> TarStager:
    stager = TarStager(folder, min_bytes=1)
    at = 0
    while at < len(data):  # in pieces of any size, as a socket delivers them
        n = rng.choice([1, 7, 511, 512, 513, 4096, 65536])
        stager.feed(data[at : at + n])
        at += n
    return stager


@pytest.mark.parametrize("fmt", [tarfile.PAX_FORMAT, tarfile.GNU_FORMAT, tarfile.USTAR_FORMAT])
def test_staged_files_unpack_to_the_same_tree_as_copies(tmp_path: Path, fmt: int) -> None:
    rng = random.Random(fmt)
    data = make(fmt, rng) if fmt != tarfile.USTAR_FORMAT else _ustar(rng)
    (tmp_path / "in.tar").write_bytes(data)
    copied = tmp_path / "copied"
    extract_upload(tmp_path / "in.tar", copied, Limits())
    stager = stage(data, tmp_path / "staging", rng)
    moved = tmp_path / "moved"
    extract_upload(tmp_path / "in.tar", moved, Limits(), stager)
    assert tree(moved) == tree(copied)
    assert len(stager._done) >= 4 and not list((tmp_path / "staging").iterdir())  # every staged file was moved


def _ustar(rng: random.Random) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for i in range(5):
            add(tar, f"f{i}", rng.randbytes(rng.randrange(1, 20_000)))
    return buf.getvalue()


def test_a_pax_size_unlike_the_header_size_is_copied_from_the_tar(tmp_path: Path) -> None:
    """A PAX record may give a member another size than its ustar header: the staged range is the
    header's, tarfile's is the PAX one, and the member must come from the tar, byte for byte."""
    rng = random.Random(1)
    payload = rng.randbytes(3000)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        add(tar, "f", payload, size="2000")  # tarfile reads 2000 bytes, the header says 3000
    data = buf.getvalue()
    (tmp_path / "in.tar").write_bytes(data)
    copied, moved = tmp_path / "copied", tmp_path / "moved"
    try:
        extract_upload(tmp_path / "in.tar", copied, Limits())
    except Exception as exc:  # noqa: BLE001 - refused either way is fine, as long as both agree
        with pytest.raises(type(exc)):
            extract_upload(tmp_path / "in.tar", moved, Limits(), stage(data, tmp_path / "s", rng))
        return
    extract_upload(tmp_path / "in.tar", moved, Limits(), stage(data, tmp_path / "s", rng))
    assert tree(moved) == tree(copied)


def test_a_compressed_or_cut_upload_stages_nothing_it_could_misuse(tmp_path: Path) -> None:
    rng = random.Random(2)
    data = make(tarfile.PAX_FORMAT, rng)
    packed = gzip.compress(data)
    stager = stage(packed, tmp_path / "gz", rng)
    assert stager.stopped and not stager._done
    (tmp_path / "in.tgz").write_bytes(packed)
    (tmp_path / "in.tar").write_bytes(data)
    extract_upload(tmp_path / "in.tgz", tmp_path / "a", Limits(), stager)
    extract_upload(tmp_path / "in.tar", tmp_path / "b", Limits())
    assert tree(tmp_path / "a") == tree(tmp_path / "b")
    cut = stage(data[: len(data) // 2], tmp_path / "cut", rng)  # a transfer cut off inside a member
    assert all(int(key.split("-")[0]) + int(key.split("-")[1]) <= len(data) // 2 for key in cut._done)


def _fix_checksum(block: bytearray) -> None:
    block[148:156] = b" " * 8
    block[148:156] = f"{sum(block):06o}\0 ".encode()


def test_mutated_tars_unpack_alike_with_and_without_staging(tmp_path: Path) -> None:
    """Headers changed at random (sizes, types, names; checksums made valid again half of the time),
    data changed, streams cut: with staging the outcome is what it is without it, the same tree or
    the same refusal, every time."""
    rng = random.Random(12)
    base = make(tarfile.GNU_FORMAT, rng)
    for i in range(300):
        data = bytearray(base)
        for _ in range(rng.randint(1, 4)):
            block = rng.randrange(len(data) // 512) * 512
            field = rng.choice([(124, 136), (156, 157), (0, 100), (345, 500)])
            at = rng.randrange(*field)
            data[block + at] = rng.choice(b"0123456789 \0xgLK5")
            if rng.random() < 0.5:
                header = bytearray(data[block : block + 512])
                _fix_checksum(header)
                data[block : block + 512] = header
        if rng.random() < 0.2:
            del data[rng.randrange(len(data)) :]
        path = tmp_path / f"t{i}.tar"
        path.write_bytes(bytes(data))
        outcomes = []
        for staged in (None, stage(bytes(data), tmp_path / f"s{i}", rng)):
            dest = tmp_path / f"d{i}-{staged is not None}"
            try:
                extract_upload(path, dest, Limits(), staged)
                outcomes.append(("ok", tree(dest)))
            except Exception as exc:  # noqa: BLE001 - the refusal itself is compared
                outcomes.append((type(exc).__name__, str(exc)))
        assert outcomes[0] == outcomes[1], i
