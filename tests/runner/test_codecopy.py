"""kcoral's in-container code is mounted from a copy in the data dir, named by its content."""

from __future__ import annotations

from pathlib import Path

from kcoral.runner import codecopy
from kcoral.runner.jobkinds import CODE_MOUNT, code_mounts


def test_the_copy_holds_every_package_file_and_only_those(tmp_path: Path) -> None:
    root = codecopy.code_root(tmp_path)
    assert root.parent == tmp_path.resolve() / "code" and len(root.name) == 16
    copied = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    expected = sorted(name for name, _ in codecopy._files())
    assert copied == expected and "tasks/harness/worker.py" in copied and "protocol/typeddata.py" in copied
    assert not [c for c in copied if "__pycache__" in c or c.endswith(".pyc")]
    assert (root / "tasks/harness/worker.py").read_bytes() == (
        codecopy.package_folder("tasks/harness") / "worker.py"
    ).read_bytes()
    assert (root / "tasks/harness/worker.py").stat().st_mode & 0o777 == 0o644


def test_mounts_come_from_the_copy(tmp_path: Path) -> None:
    mounts = code_mounts(tmp_path, "tasks/harness", "profiling")
    root = codecopy.code_root(tmp_path)
    assert mounts == {
        str(root / "tasks/harness"): (f"{CODE_MOUNT}/kcoral/tasks/harness", "ro"),
        str(root / "profiling"): (f"{CODE_MOUNT}/kcoral/profiling", "ro"),
    }


def test_other_contents_and_partial_copies_go_and_the_name_follows_the_content(tmp_path: Path, monkeypatch) -> None:
    code = tmp_path / "code"
    (code / "0123456789abcdef" / "tasks").mkdir(parents=True)  # an older server's copy
    (code / ".partial-1" / "x").mkdir(parents=True)  # a copy a crash cut off
    first, digest = codecopy._make(code)
    assert [p.name for p in code.iterdir()] == [first.name] and first.name == digest[:16]
    assert codecopy._make(code) == (first, digest)  # the same content: the same copy, reused
    changed = codecopy._files()[0][1]
    monkeypatch.setattr(
        Path, "read_bytes", lambda self, _r=Path.read_bytes: _r(self) + (b"#" if self == changed else b"")
    )
    second, _ = codecopy._make(code)
    assert second.name != first.name and [p.name for p in code.iterdir()] == [second.name]
