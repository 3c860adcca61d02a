"""kcoral laid out as an install lays it out, copied: kcoral/ with each part folder in it (pyproject's
package-dir: runner/ at kcoral/runner, ...). For a container that mounts the checkout: there no install
maps the parts, and the checkout's own kcoral/ holds none of them."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def package_copy(dest: Path) -> Path:
    """``dest/kcoral``, made from this checkout; mount it over the checkout's kcoral/."""
    package_dir = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    top = dest / "kcoral"
    shutil.copytree(ROOT / "kcoral", top, ignore=skip)
    for name, folder in package_dir.items():
        shutil.copytree(ROOT / folder, top.joinpath(*name.split(".")[1:]), ignore=skip)
    return top
