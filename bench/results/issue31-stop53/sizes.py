"""Issue 31's module and function sizes (stop 53): modules over 400 lines and functions over 60, over the
installed parts (runner, cli, tasks, profiling, images, kcoral less its three shims).

    python3 bench/results/issue31-stop53/sizes.py [ROOT]
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PARTS = ["runner", "cli", "tasks", "profiling", "images", "kcoral"]
SHIMS = {"kcoral/__init__.py", "kcoral/__main__.py", "kcoral/protocol/__init__.py"}


def functions(tree: ast.AST, prefix: str = "") -> list[tuple[int, str]]:
    """(lines, qualified name) of every function and method, nested ones too."""
    out = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.ClassDef):
            out += functions(node, f"{prefix}{node.name}.")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            assert node.end_lineno is not None
            out.append((node.end_lineno - node.lineno + 1, prefix + node.name))
            out += functions(node, f"{prefix}{node.name}.")
    return out


def main(root: Path) -> None:
    files = sorted(
        p.relative_to(root).as_posix()
        for part in PARTS
        for p in (root / part).rglob("*.py")
        if "__pycache__" not in p.parts and not p.is_symlink()
    )
    mods, funcs = [], []
    for rel in files:
        if rel in SHIMS:
            continue
        src = (root / rel).read_text()
        mods.append((src.count("\n"), rel))
        funcs += [(n, f"{rel}: {name}") for n, name in functions(ast.parse(src))]
    big = sorted((m for m in mods if m[0] > 400), reverse=True)
    long = sorted((f for f in funcs if f[0] > 60), reverse=True)
    print(f"{len(mods)} modules, {sum(n for n, _ in mods)} lines")
    print(f"modules over 400 lines: {len(big)}")
    for n, rel in big:
        print(f"  {n} {rel}")
    print(f"functions over 60 lines: {len(long)}")
    for n, name in long:
        print(f"  {n} {name}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[3]))
