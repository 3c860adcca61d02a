"""The first pass over an upload (runner.tarscan, through archive.extract_upload): truncated and
corrupt compression, metadata headers that would make tarfile allocate their whole size, data a
header declares for a member that has none, and both sides of each cap. Real tar bytes, no Docker."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import tarfile
import tracemalloc
from pathlib import Path

import pytest

from kcoral.protocol.errors import BadRequest, PayloadTooLarge
from kcoral.runner.archive import extract_upload
from kcoral.runner.limits import Limits
from kcoral.runner.tarscan import BLOCK, META_BYTES


def tar_bytes(files: dict[str, bytes], fmt: int = tarfile.PAX_FORMAT, pax: dict[str, str] | None = None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt, pax_headers=pax or {}) as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


COMPRESSORS = {"gzip": gzip.compress, "xz": lzma.compress, "bz2": bz2.compress, "none": lambda b: b}


def upload(tmp_path: Path, data: bytes, limits: Limits | None = None) -> int:
    path = tmp_path / "up"
    path.write_bytes(data)
    return extract_upload(path, tmp_path / "dest", limits or Limits())


def refused(tmp_path: Path, data: bytes, limits: Limits | None = None) -> str:
    with pytest.raises((BadRequest, PayloadTooLarge)) as exc:
        upload(tmp_path, data, limits)
    assert not (tmp_path / "dest").exists()
    return exc.value.message


@pytest.mark.parametrize("kind", COMPRESSORS)
def test_every_compression_extracts(tmp_path: Path, kind: str) -> None:
    assert upload(tmp_path, COMPRESSORS[kind](tar_bytes({"a.py": b"print(1)\n", "b": b"x" * 5000}))) == 2
    assert (tmp_path / "dest" / "b").read_bytes() == b"x" * 5000


@pytest.mark.parametrize("kind", ["gzip", "xz", "bz2"])
@pytest.mark.parametrize("keep", [0.5, 0.9])
def test_a_truncated_compressed_upload_is_a_400(tmp_path: Path, kind: str, keep: float) -> None:
    whole = COMPRESSORS[kind](tar_bytes({"a": bytes(range(256)) * 400}))
    message = refused(tmp_path, whole[: int(len(whole) * keep)])
    assert message.startswith("the upload is truncated"), message


def test_a_truncated_plain_tar_is_a_400(tmp_path: Path) -> None:
    whole = tar_bytes({"a": b"x" * 5000})
    assert refused(tmp_path, whole[: BLOCK + 1000]) == "the upload is truncated: the archive ends inside a member"
    assert refused(tmp_path, whole[:300]) == "the upload is truncated: it ends inside a tar header"


@pytest.mark.parametrize("kind", ["gzip", "xz", "bz2"])
def test_corrupt_compression_is_a_400(tmp_path: Path, kind: str) -> None:
    whole = bytearray(COMPRESSORS[kind](tar_bytes({"a": bytes(range(256)) * 400})))
    for i in range(20, len(whole) - 20, 7):
        whole[i] ^= 0x5A
    message = refused(tmp_path, bytes(whole))
    assert "corrupt" in message or "not a readable tar" in message or "truncated" in message, message


def test_a_bad_header_checksum_is_a_400(tmp_path: Path) -> None:
    data = bytearray(tar_bytes({"a": b"1"}, fmt=tarfile.USTAR_FORMAT))
    data[0] ^= 1
    assert refused(tmp_path, bytes(data)) == "the upload is not a readable tar archive: a header's checksum is wrong"


def pax_bomb(size: int) -> bytes:
    """A PAX header member declaring about ``size`` bytes of attributes (what tarfile reads whole)."""
    return tar_bytes({"a": b"1"}, pax={"comment": "c" * size})


def test_a_huge_pax_header_is_refused_before_tarfile_reads_it(tmp_path: Path) -> None:
    bomb = gzip.compress(pax_bomb(8 << 20))  # 8 MiB of attributes, 8 KiB compressed
    assert len(bomb) < 64 << 10
    tracemalloc.start()
    try:
        message = refused(tmp_path, bomb)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert message.startswith("the upload has a ")
    assert message.endswith(f"-byte tar metadata header; the limit is {META_BYTES}")
    assert peak < 4 << 20, f"the scan allocated {peak} bytes"


def test_a_pax_header_up_to_the_cap_is_accepted(tmp_path: Path) -> None:
    assert upload(tmp_path, tar_bytes({"a": b"1"}, pax={"comment": "c" * (META_BYTES - 1000)})) == 1


def test_a_gnu_long_name_counts_as_metadata(tmp_path: Path) -> None:
    name = "d/" + "n" * 200 + "/f"
    assert upload(tmp_path, tar_bytes({name: b"1"}, fmt=tarfile.GNU_FORMAT)) == 1
    assert (tmp_path / "dest" / name).read_bytes() == b"1"


def test_data_declared_for_a_folder_counts_against_the_unpacked_budget(tmp_path: Path) -> None:
    """tarfile skips a folder's declared data by decompressing it; the scan counts it."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        info = tarfile.TarInfo("d")
        info.type, info.size = tarfile.DIRTYPE, 0
        tar.addfile(info)
    raw = bytearray(buf.getvalue())
    header = raw[:BLOCK]
    header[124:136] = b"%011o\0" % (1 << 20)
    header[148:156] = b" " * 8
    header[148:156] = b"%06o\0 " % sum(header)
    body = bytes(header) + b"\0" * (1 << 20) + b"\0" * 1024
    assert refused(tmp_path, gzip.compress(body), Limits(unpacked_bytes=1000)) == (
        "the upload unpacks to more than 1000 bytes"
    )
    assert upload(tmp_path, gzip.compress(body), Limits(unpacked_bytes=1 << 20)) == 0


def test_an_empty_file_is_a_400(tmp_path: Path) -> None:
    assert refused(tmp_path, b"") == "the upload is truncated: it ends inside a tar header"
