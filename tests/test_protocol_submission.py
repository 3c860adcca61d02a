"""A submission's digest (kcoral.protocol.submission): the same files give the same digest however the
tar was packed (order, mtimes, modes, folders, compression), any change of a byte or a name gives
another; the client's tar (cli.tarball) and a hand-made one agree; the default label. Pure logic."""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path

import pytest

from kcoral.cli.tarball import build_tarball
from kcoral.protocol.models import EvalSpec
from kcoral.protocol.submission import default_label, submission_digest, tar_digest
from kcoral.protocol.typeddata import DataError

FILES = {"solution.py": b"def setup(data):\n    pass\n", "lib/helper.py": b"X = 1\n"}


def tar_of(
    path: Path, files: dict[str, bytes], *, order: list[str] | None = None, mode: str = "w", **meta: int
) -> Path:
    with tarfile.open(path, mode) as tar:
        if meta.get("folders"):
            folder = tarfile.TarInfo("./lib")
            folder.type = tarfile.DIRTYPE
            tar.addfile(folder)
        for name in order or sorted(files):
            info = tarfile.TarInfo(("./" if meta.get("dotted") else "") + name)
            info.size, info.mtime, info.mode = len(files[name]), meta.get("mtime", 0), meta.get("perm", 0o644)
            tar.addfile(info, io.BytesIO(files[name]))
    return path


def test_the_digest_is_the_files_whatever_the_packing(tmp_path: Path) -> None:
    plain = tar_digest(tar_of(tmp_path / "a.tar", FILES))
    others = [
        tar_of(tmp_path / "b.tar", FILES, order=["solution.py", "lib/helper.py"]),
        tar_of(tmp_path / "c.tar", FILES, mtime=12345, perm=0o755),
        tar_of(tmp_path / "d.tar", FILES, folders=1, dotted=1),
        tar_of(tmp_path / "e.tar.gz", FILES, mode="w:gz"),
    ]
    assert {tar_digest(t) for t in others} == {plain}
    expected = submission_digest((p, hashlib.sha256(b).hexdigest()) for p, b in FILES.items())
    assert plain == expected and len(plain) == 64


@pytest.mark.parametrize(
    "changed",
    [
        {**FILES, "solution.py": FILES["solution.py"] + b" "},  # a byte more
        {"solution.py": FILES["solution.py"], "lib/helper2.py": FILES["lib/helper.py"]},  # a name
        {"solution.py": FILES["solution.py"]},  # a file less
        {**FILES, "empty": b""},  # an empty file more
    ],
)
def test_any_change_of_content_or_name_changes_the_digest(tmp_path: Path, changed: dict[str, bytes]) -> None:
    assert tar_digest(tar_of(tmp_path / "a.tar", FILES)) != tar_digest(tar_of(tmp_path / "b.tar", changed))


def test_a_path_and_its_content_cannot_trade_bytes() -> None:
    """Each pair is framed (its path's length): ("a", X) and ("a\\0X...", ...) never hash alike."""
    assert submission_digest([("ab", "c" * 64)]) != submission_digest([("a", "bc" + "c" * 62)])


def test_the_clients_tar_gives_the_digest_of_its_files(tmp_path: Path) -> None:
    folder = tmp_path / "softmax_v2"
    for name, data in FILES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    packed = build_tarball(folder, tmp_path)
    try:
        digest = tar_digest(packed.path)
    finally:
        packed.remove()
    assert digest == tar_digest(tar_of(tmp_path / "hand.tar", FILES, order=["solution.py", "lib/helper.py"]))
    assert default_label(folder, digest) == f"softmax_v2-{digest[:8]}"


def test_a_default_label_drops_control_characters(tmp_path: Path) -> None:
    folder = tmp_path / "evil\x1b[31m\u202ename"
    folder.mkdir()
    label = default_label(folder, "ab" * 32)
    assert label == "evil[31mname-abababab"
    EvalSpec(task="demo/softmax", label=label)  # a label the spec takes


@pytest.mark.parametrize("label", ["x\ny", "\x1b[2J", "a" * 101, "tab\there"])
def test_a_label_with_control_characters_or_too_long_is_refused(label: str) -> None:
    with pytest.raises(DataError, match="label"):
        EvalSpec(task="demo/softmax", label=label)
