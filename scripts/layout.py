"""Where kcoral's packages are in this checkout, as pyproject.toml's package-dir says: kcoral/ is the package
(with kcoral.protocol), each part folder a subpackage of it (runner/ is kcoral.runner, ...). An install, a
wheel or an editable one, maps them so; the editable install through an import hook, which tools that find
modules by path (mypy) cannot follow. For them:

    python3 scripts/layout.py --view build/mypy

makes build/mypy/kcoral: the package as it is installed, made of links to this checkout's files and folders
(mypy reads it through its mypy_path; no program imports it). Run it again after package-dir changes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def package_dirs(root: Path = ROOT) -> dict[str, Path]:
    """{import name: folder}: kcoral and each package that pyproject maps to a folder of its own."""
    setuptools = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    return {"kcoral": root / "kcoral", **{name: root / folder for name, folder in setuptools["package-dir"].items()}}


def make_view(dest: Path, root: Path = ROOT) -> Path:
    """``dest/kcoral`` made anew: each entry of kcoral/ and each mapped folder as a relative link."""
    view = dest / "kcoral"
    if view.exists():
        shutil.rmtree(view)
    view.mkdir(parents=True)
    dirs = package_dirs(root)
    links = {entry.name: entry for entry in dirs.pop("kcoral").iterdir() if entry.name != "__pycache__"}
    for name, folder in dirs.items():
        parent, _, leaf = name.rpartition(".")
        if parent != "kcoral":
            raise SystemExit(f"layout.py: {name}: only kcoral's direct subpackages are mapped to folders")
        links[leaf] = folder
    for name, target in sorted(links.items()):
        (view / name).symlink_to(os.path.relpath(target, view))
    return view


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--view", type=Path, metavar="DIR", help="make DIR/kcoral, the installed layout as links")
    args = ap.parse_args()
    if args.view is None:
        for name, folder in package_dirs().items():
            print(f"{name}\t{folder.relative_to(ROOT)}")
    else:
        print(f"made {make_view(args.view)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
