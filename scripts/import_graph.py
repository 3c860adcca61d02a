"""kcoral's import graph between its packages, as tools that read imports by path see it: the arrows
between the parts (runner, cli, tasks, profiling, images, protocol; tasks.harness apart, it runs in
containers) and every circle among modules.

    python3 scripts/import_graph.py [--lazy] [--json]

Module-level imports only unless ``--lazy`` (imports inside functions too; ``if TYPE_CHECKING:``
blocks never count: they do not run). Exits 1 when a circle is found among modules.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections.abc import Iterator
from pathlib import Path

from layout import ROOT, package_dirs

#: the folders that are kcoral's packages, by their import name: the part folders pyproject's package-dir
#: maps (runner/ is kcoral.runner, ...) and kcoral/protocol
PARTS = {name: folder for name, folder in package_dirs().items() if name != "kcoral"}
PARTS["kcoral.protocol"] = ROOT / "kcoral" / "protocol"
#: task folders are data (a task's own reference code), not kcoral's modules
SKIP = ("tasks/kda/", "tasks/demo/")


def modules() -> dict[str, Path]:
    found = {}
    for package, folder in PARTS.items():
        for path in sorted(folder.rglob("*.py")):
            if any(f"/{s}" in path.as_posix() for s in SKIP):
                continue
            parts = path.relative_to(folder).with_suffix("").parts
            name = ".".join((package, *parts))
            found[name.removesuffix(".__init__")] = path
    return found


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported(tree: ast.Module, lazy: bool) -> Iterator[str]:
    """The absolute module names ``tree`` imports (``from X import y``: X.y when that is a module)."""

    def walk(nodes: list[ast.stmt], top: bool) -> Iterator[str]:
        for node in nodes:
            if isinstance(node, ast.If) and _type_checking(node):
                yield from walk(node.orelse, top)
                continue
            if isinstance(node, ast.Import):
                yield from (a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                yield node.module
                yield from (f"{node.module}.{a.name}" for a in node.names)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if lazy:
                    yield from walk(node.body, False)
                continue
            for field in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(node, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], (ast.stmt, ast.excepthandler)):
                    yield from walk(
                        [n for n in inner if isinstance(n, ast.stmt)]
                        + [s for h in inner if isinstance(h, ast.excepthandler) for s in h.body],
                        top,
                    )

    yield from walk(tree.body, True)


def graph(lazy: bool) -> dict[str, set[str]]:
    mods = modules()
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        for target in imported(ast.parse(path.read_text(), str(path)), lazy):
            if target in mods and target != name:
                edges[name].add(target)
    return edges


def part(module: str) -> str:
    if module.startswith("kcoral.tasks.harness"):
        return "kcoral.tasks.harness"
    return next(p for p in sorted(PARTS, key=len, reverse=True) if module == p or module.startswith(p + "."))


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10000))  # one frame per module on the deepest path; given back after
    try:
        for v in sorted(edges):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(out, key=len, reverse=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lazy", action="store_true", help="count imports inside functions too")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    edges = graph(args.lazy)
    arrows: dict[tuple[str, str], int] = {}
    for a, targets in edges.items():
        for b in targets:
            pa, pb = part(a), part(b)
            if pa != pb:
                arrows[(pa, pb)] = arrows.get((pa, pb), 0) + 1
    found = circles(edges)
    if args.json:
        doc = {
            "modules": len(edges),
            "imports": sum(map(len, edges.values())),
            "arrows": [{"from": a, "to": b, "imports": n} for (a, b), n in sorted(arrows.items())],
            "circles": found,
        }
        print(json.dumps(doc, indent=1))
    else:
        print(f"{len(edges)} modules, {sum(map(len, edges.values()))} imports between them")
        print(f"{len(arrows)} arrows between parts:")
        for (a, b), n in sorted(arrows.items()):
            print(f"  {a} -> {b} ({n})")
        print(f"{len(found)} circles among modules" + (":" if found else ""))
        for comp in found:
            print(f"  {len(comp)}: {' '.join(m.removeprefix('kcoral.') for m in comp)}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
