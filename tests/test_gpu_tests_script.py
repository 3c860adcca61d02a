"""The GPU host runs every test marked `gpu` (CI cannot): scripts/gpu-host-tests.sh names them all."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "gpu-host-tests.sh"


def _listed() -> list[Path]:
    found = re.search(r"^GPU_TESTS=\(([^)]*)\)", SCRIPT.read_text(), re.MULTILINE)
    assert found, "scripts/gpu-host-tests.sh has no GPU_TESTS=(...) line"
    return [ROOT / p for p in found.group(1).split()]


#: a module's mark (``pytestmark = pytest.mark.gpu``) or a test's (``@pytest.mark.gpu``)
MARK = re.compile(r"^\s*(pytestmark\s*=\s*pytest\.mark\.gpu\b|@pytest\.mark\.gpu\b)", re.MULTILINE)


def _marked() -> set[Path]:
    return {p for p in (ROOT / "tests").rglob("test_*.py") if MARK.search(p.read_text())}


def test_the_gpu_host_script_runs_every_gpu_marked_test_file() -> None:
    listed = _listed()
    assert all(p.exists() for p in listed), [str(p) for p in listed if not p.exists()]
    covered = {p for p in _marked() if any(p == q or q in p.parents for q in listed)}
    assert _marked() - covered == set(), sorted(str(p.relative_to(ROOT)) for p in _marked() - covered)
    # and nothing listed that marks no test gpu (a file moved or renamed)
    files = [p for p in listed if p.is_file()]
    assert all(p in _marked() for p in files), files
