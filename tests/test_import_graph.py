"""No import circle among kcoral's modules, imports inside functions included (scripts/import_graph.py
reads every import by path, as tools do): the check the repository keeps."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_no_module_imports_itself_through_others() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "import_graph.py"), "--lazy"], capture_output=True, text=True
    )
    assert out.returncode == 0 and "0 circles among modules" in out.stdout, out.stdout + out.stderr


def test_the_check_finds_a_circle(tmp_path: Path) -> None:
    """The checker itself: two modules importing each other (one lazily) make a circle it reports."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import import_graph
    finally:
        sys.path.pop(0)
    (tmp_path / "a.py").write_text("import kcoral.runner.b\n")
    (tmp_path / "b.py").write_text("def f():\n    from kcoral.runner import a\n")
    (tmp_path / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import kcoral.runner.a\n")
    parts = {"kcoral.runner": tmp_path}
    saved = import_graph.PARTS
    import_graph.PARTS = parts
    try:
        assert import_graph.circles(import_graph.graph(lazy=True)) == [["kcoral.runner.a", "kcoral.runner.b"]]
        assert import_graph.circles(import_graph.graph(lazy=False)) == []
    finally:
        import_graph.PARTS = saved
