"""Reading job folders without following links or blocking (runner.jobfs), and the output walk and
copy built on it (runner.archive): real files, links, FIFOs; no Docker."""

from __future__ import annotations

import os
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
    before = dir_usage(root, 10_000)
    (outside / "big").write_bytes(b"x" * (1 << 20))
    assert dir_usage(root, 10_000) == before  # what the link leads to is never counted


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
