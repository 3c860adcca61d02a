"""profiling.sanitizer_report: the summary of compute-sanitizer's reports, text and XML, on the fixtures
in tests/fixtures/sanitizer (hand-written for now: see its README) and on hostile files."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest

from kcoral.profiling.sanitizer_findings import MAX_TEXT, ReportError
from kcoral.profiling.sanitizer_report import format_lines, load, load_pair, parse, summarize
from kcoral.profiling.sanitizer_text import split_where

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sanitizer"


def doc(name: str) -> dict[str, Any]:
    return summarize(load(FIXTURES / name))


def groups(d: dict[str, Any]) -> list[tuple[str | None, str, int, str | None]]:
    return [(g["kernel"], g["kind"], g["count"], g["location"]) for g in d["groups"]]


def test_memcheck_text() -> None:
    d = doc("handmade-memcheck.txt")
    assert d["format"] == "text" and d["errors"] == 4 and d["printed"] == 4
    assert groups(d) == [
        ("add_kernel", "Invalid __global__ read of size 4 bytes", 2, "/job/input/oob.py:14"),
        (None, "CUDA API error cudaErrorLaunchFailure on cuStreamSynchronize", 1, None),
        ("scale_kernel", "Invalid __global__ write of size 4 bytes", 1, "/job/input/oob.py:27"),
    ]
    first = d["groups"][0]
    assert first["thread"] == [104, 0, 0] and first["block"] == [7, 0, 0]
    assert d["notes"] == ["Target application returned an error"]
    json.dumps(d)


def test_memcheck_xml_groups_as_the_text_does() -> None:
    d = doc("handmade-memcheck.xml")
    assert d["format"] == "xml" and d["errors"] == 3
    text = doc("handmade-memcheck.txt")
    assert [g for g in groups(d)] == [g for g in groups(text) if g[0] is not None]
    assert d["groups"][0]["thread"] == [104, 0, 0] and d["groups"][1]["block"] == [8, 0, 0]


def test_the_pair_takes_the_xml_findings_and_the_text_total() -> None:
    d = summarize(load_pair(FIXTURES / "handmade-memcheck.xml", FIXTURES / "handmade-memcheck.txt"))
    assert d["format"] == "xml" and d["errors"] == 4 and d["printed"] == 3
    assert summarize(load_pair(None, FIXTURES / "handmade-clean.txt"))["errors"] == 0
    assert summarize(load_pair(FIXTURES / "handmade-memcheck.xml", FIXTURES / "absent.txt"))["errors"] == 3
    with pytest.raises(ReportError, match="no compute-sanitizer report"):
        load_pair(FIXTURES / "absent.xml", None)


def test_racecheck_both_report_modes() -> None:
    d = doc("handmade-racecheck.txt")
    assert d["errors"] == 3
    assert sorted(groups(d), key=str) == sorted(
        [
            ("reduce_kernel", "Race hazard", 1, "/job/input/race.py:20"),
            ("sumKernel(int*, int*)", "Race hazard", 1, "race.cu:13"),
            ("waw_kernel", "Potential WAW hazard", 1, "/job/input/race.py:31"),
        ],
        key=str,
    )
    waw = next(g for g in d["groups"] if g["kernel"] == "waw_kernel")
    assert waw["thread"] == [3, 0, 0] and waw["block"] == [1, 0, 0]


def test_initcheck_synccheck_and_a_clean_run() -> None:
    assert groups(doc("handmade-initcheck.txt")) == [
        ("sum_kernel", "Uninitialized __global__ memory read of size 4 bytes", 1, "/job/input/init.py:9")
    ]
    sync = doc("handmade-synccheck.txt")
    assert groups(sync) == [
        ("divergent_kernel(float*)", "Barrier error detected. Divergent thread(s) in warp", 1, "divergence.cu:14")
    ]
    clean = doc("handmade-clean.txt")
    assert clean["errors"] == 0 and clean["groups"] == []
    assert format_lines(clean) == ["compute-sanitizer: 0 errors"]


@pytest.mark.parametrize(
    ("where", "file", "expected"),
    [
        ("add_kernel+0x70", "/f.py:12", ("add_kernel", "/f.py:12")),
        ("k(float*)+0x160", "f.cu:6", ("k(float*)", "f.cu:6")),
        ("0x100", "/f.cu:30:k(const int *, int *)", ("k(const int *, int *)", "/f.cu:30")),
        ("add_kernel+0x70", None, ("add_kernel", None)),
        ("0x70", "add_kernel", ("add_kernel", None)),
    ],
)
def test_the_at_layouts(where: str, file: str | None, expected: tuple[str | None, str | None]) -> None:
    assert split_where(where, file) == expected


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("hostile-truncated.xml", "not well-formed"),
        ("hostile-bomb.xml", "DOCTYPE or an ENTITY"),
        ("hostile-external-entity.xml", "DOCTYPE or an ENTITY"),
        ("hostile-wrong-root.xml", "root is not <ComputeSanitizerOutput>"),
        ("hostile-not-a-report.txt", "not a compute-sanitizer report"),
    ],
)
def test_hostile_files_are_one_line_errors(name: str, message: str) -> None:
    with pytest.raises(ReportError, match=message) as caught:
        load(FIXTURES / name)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00\x01\x02binary",
        b'<?xml version="1.0" encoding="utf-16"?><ComputeSanitizerOutput/>',
        b"<ComputeSanitizerOutput>\xff\xfe</ComputeSanitizerOutput>",
        b"<ComputeSanitizerOutput><record><who><threadIdx><x>" + b"9" * 5000 + b"</x></threadIdx></who></record>"
        b"</ComputeSanitizerOutput>",
        b"<!doctype x><ComputeSanitizerOutput/>",
    ],
)
def test_odd_bytes_never_raise_anything_but_report_errors(data: bytes) -> None:
    with contextlib.suppress(ReportError):
        summarize(parse(data))


def test_size_cap(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    big.write_bytes(b"========= COMPUTE-SANITIZER\n" + b"x" * 2048)
    with pytest.raises(ReportError, match="larger than the 1024 bytes"):
        load(big, limit=1024)
    with pytest.raises(ReportError, match="No such file"):
        load(tmp_path / "absent.xml")


def test_escapes_in_names_never_reach_the_terminal() -> None:
    d = doc("hostile-escapes.txt")
    assert "\x1b" in d["groups"][0]["kernel"]  # the JSON keeps what the report said (json.dumps escapes it)
    assert "\\u001b" in json.dumps(d)
    lines = format_lines(d)
    assert not any(c in line for line in lines for c in "\x1b\x07\r")
    assert "\\x1b[2K" in lines[1]


def test_long_names_are_cut() -> None:
    name = "k" * 10_000
    data = f"========= Invalid __global__ read of size 4 bytes\n=========     at {name}+0x10 in /f.py:1\n"
    d = summarize(parse((data + "========= ERROR SUMMARY: 1 error\n").encode()))
    assert len(d["groups"][0]["kernel"]) == MAX_TEXT


def test_an_unnamed_error_with_a_location_is_counted_and_a_bare_line_is_a_note() -> None:
    d = doc("handmade-memcheck-exception.txt")
    assert groups(d) == [("gather_kernel", "Warp Illegal Address", 1, "/job/input/gather.py:40")]
    assert d["groups"][0]["block"] == [12, 0, 0] and d["notes"] == ["Target application returned an error"]


def test_a_total_under_the_errors_printed_is_not_believed() -> None:
    """The report is the job's file, and a job can write it: an ERROR SUMMARY that says fewer errors than
    the report prints counts as those printed (the job's exit code 86 and summarize's rest on it)."""
    text = (FIXTURES / "handmade-memcheck.txt").read_text()
    printed = parse(text.encode()).errors
    forged = parse(text.replace(f"ERROR SUMMARY: {printed} error", "ERROR SUMMARY: 0 error").encode())
    assert printed >= 1 and forged.total == 0 and forged.errors == printed
