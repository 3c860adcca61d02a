"""Mutation score of one module against its unit tests (issue 31 item 7). Not run by CI: a developer's tool.

    python scripts/mutation.py MODULE [--only FUNCTION] [--list-survivors] -- TEST_FILE...

MODULE is an import name (kcoral.tasks.harness.stats). Every mutation site of its source (or of one
function's, with --only) is tried in turn: the mutated module is built in a forked child, through an
import hook, so no file is written and the checkout stays clean; pytest runs the given test files there
with -x. A mutant is killed when pytest fails (or runs past the timeout), survives when it passes.

Operators (those of mutmut 2, which this reproduces without its per-mutant process start, ~4 s here):
arithmetic and augmented-assignment operators swapped (+ -, * /, // /, % /, ** *, << >>, & |), comparisons
moved by one (< <=, > >=, == !=, is / is not, in / not in), and/or swapped, `not` and unary minus
dropped, numbers n -> n+1, True/False swapped, strings wrapped in XX..XX, min/max swapped,
break/continue swapped, an assignment's value replaced by None. Docstrings, annotations and lines
marked `# pragma: no mutate` are left alone.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import importlib.abc
import importlib.util
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

BINOPS: dict[type, type] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Div,
    ast.Mod: ast.Div,
    ast.Pow: ast.Mult,
    ast.LShift: ast.RShift,
    ast.RShift: ast.LShift,
    ast.BitAnd: ast.BitOr,
    ast.BitOr: ast.BitAnd,
}
CMPOPS: dict[type, type] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}


@dataclass(frozen=True)
class Site:
    index: int
    line: int
    what: str


class Mutator(ast.NodeTransformer):
    """Walks the tree in a fixed order numbering the mutation sites; applies the one numbered `target`
    (None: applies nothing, only counts)."""

    def __init__(self, target: int | None, skip_lines: set[int], only: str | None) -> None:
        self.target = target
        self.skip_lines = skip_lines
        self.only = only
        self.inside = only is None
        self.sites: list[Site] = []
        self.docstrings: set[int] = set()

    def _site(self, node: ast.AST, what: str) -> bool:
        line = getattr(node, "lineno", 0)
        if not self.inside or line in self.skip_lines:
            return False
        self.sites.append(Site(len(self.sites), line, what))
        return self.sites[-1].index == self.target

    # structure: what is not mutated
    def _mark_docstring(self, body: list[ast.stmt]) -> None:
        first = body[0] if body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            self.docstrings.add(id(first.value))

    def visit_Module(self, node: ast.Module) -> ast.AST:
        self._mark_docstring(node.body)
        return self.generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        self._mark_docstring(node.body)
        return self.generic_visit(node)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.AST:
        self._mark_docstring(node.body)
        was = self.inside
        if self.only is not None and node.name == self.only:
            self.inside = True
        # annotations and decorators are not mutated; defaults and the body are
        node.args.defaults = [self.visit(d) for d in node.args.defaults]
        node.args.kw_defaults = [None if d is None else self.visit(d) for d in node.args.kw_defaults]
        node.body = [self.visit(s) for s in node.body]
        self.inside = was
        return node

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        if node.value is not None:
            node.value = self.visit(node.value)
        return node

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.AST:
        # the expressions inside an f-string are mutated, its literal parts are not
        for v in node.values:
            if isinstance(v, ast.FormattedValue):
                v.value = self.visit(v.value)
        return node

    def visit_If(self, node: ast.If) -> ast.AST:
        # `if TYPE_CHECKING:` and `if __name__ == "__main__":` blocks are not the module's behaviour
        src = ast.unparse(node.test)
        if src in ("TYPE_CHECKING", "__name__ == '__main__'"):
            return node
        return self.generic_visit(node)

    # operators
    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        new = BINOPS.get(type(node.op))
        if new is not None and self._site(node, f"{type(node.op).__name__} -> {new.__name__}"):
            node.op = new()
        return node

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        self.generic_visit(node)
        new = BINOPS.get(type(node.op))
        if new is not None and self._site(node, f"{type(node.op).__name__}= -> {new.__name__}="):
            node.op = new()
        return node

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        for i, op in enumerate(node.ops):
            new = CMPOPS.get(type(op))
            if new is not None and self._site(node, f"{type(op).__name__} -> {new.__name__}"):
                node.ops[i] = new()
        return node

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        self.generic_visit(node)
        new = ast.Or if isinstance(node.op, ast.And) else ast.And
        if self._site(node, f"{type(node.op).__name__} -> {new.__name__}"):
            node.op = new()
        return node

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, (ast.Not, ast.USub)) and self._site(node, f"drop {type(node.op).__name__}"):
            return node.operand
        return node

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if id(node) in self.docstrings:
            return node
        v = node.value
        if isinstance(v, bool):
            if self._site(node, f"{v} -> {not v}"):
                return ast.copy_location(ast.Constant(not v), node)
        elif isinstance(v, (int, float)):
            if self._site(node, f"{v!r} -> {v + 1!r}"):
                return ast.copy_location(ast.Constant(v + 1), node)
        elif isinstance(v, str) and self._site(node, f"{v[:30]!r} -> 'XX..XX'"):
            return ast.copy_location(ast.Constant(f"XX{v}XX"), node)
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in ("min", "max"):
            new = "max" if node.func.id == "min" else "min"
            if self._site(node, f"{node.func.id} -> {new}"):
                node.func = ast.copy_location(ast.Name(new, ast.Load()), node.func)
        return node

    def visit_Break(self, node: ast.Break) -> ast.AST:
        if self._site(node, "break -> continue"):
            return ast.copy_location(ast.Continue(), node)
        return node

    def visit_Continue(self, node: ast.Continue) -> ast.AST:
        if self._site(node, "continue -> break"):
            return ast.copy_location(ast.Break(), node)
        return node

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        self.generic_visit(node)
        is_none = isinstance(node.value, ast.Constant) and node.value.value is None
        if not is_none and self._site(node, "value -> None"):
            node.value = ast.copy_location(ast.Constant(None), node.value)
        return node


def mutate(tree: ast.Module, target: int | None, skip: set[int], only: str | None) -> tuple[ast.Module, list[Site]]:
    m = Mutator(target, skip, only)
    new = m.visit(copy.deepcopy(tree))
    return ast.fix_missing_locations(new), m.sites


class _Loader(importlib.abc.Loader):
    def __init__(self, code: object) -> None:
        self.code = code

    def create_module(self, spec):  # noqa: ANN001, ANN201
        return None

    def exec_module(self, module) -> None:  # noqa: ANN001
        exec(self.code, module.__dict__)  # noqa: S102


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self, name: str, origin: str, code: object) -> None:
        self.name, self.origin, self.code = name, origin, code

    def find_spec(self, fullname, path, target=None):  # noqa: ANN001, ANN201
        if fullname != self.name:
            return None
        return importlib.util.spec_from_loader(fullname, _Loader(self.code), origin=self.origin)


def run_child(name: str, origin: str, tree: ast.Module | None, tests: list[str], quiet: bool) -> int:
    """Fork; in the child, import hook for the mutant, then pytest. Returns the child's status."""
    pid = os.fork()
    if pid == 0:
        try:
            if quiet:
                fd = os.open(os.devnull, os.O_WRONLY)
                os.dup2(fd, 1)
                os.dup2(fd, 2)
            if tree is not None:
                code = compile(tree, origin, "exec")
                sys.meta_path.insert(0, _Finder(name, origin, code))
            import pytest

            # unit tests only: no conftest (its engine fixtures, its server imports), no plugins but timeout
            os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
            sys.path.insert(0, os.getcwd())  # `tests.` imports, which the root conftest would have allowed
            args = ["-x", "-q", "-p", "no:cacheprovider", "-p", "pytest_timeout", "--noconftest"]
            rc = pytest.main([*args, "-W", "ignore::pytest.PytestAssertRewriteWarning", *tests])
            os._exit(int(rc))
        except BaseException:  # noqa: BLE001
            import traceback

            traceback.print_exc()
            os._exit(99)
    return pid


def wait(pid: int, timeout: float) -> int | None:
    """The child's exit code, or None when it ran past the timeout (then it is killed)."""
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None
        time.sleep(0.02)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("module")
    ap.add_argument("--only", help="mutate only inside the function (or method) of this name")
    ap.add_argument("--list-survivors", action="store_true")
    ap.add_argument("--preload", default="pytest,pytest_timeout,docker,httpx,uvicorn,fastapi,pydantic,torch,numpy")
    ap.add_argument("tests", nargs="+")
    a = ap.parse_args()
    for mod in a.preload.split(","):  # third-party only: never the module under test or what imports it
        with contextlib.suppress(ImportError):
            __import__(mod)
    spec = importlib.util.find_spec(a.module)
    assert spec is not None and spec.origin, a.module
    # finding it imported its parent packages; nothing of them may have imported the module itself
    assert a.module not in sys.modules, f"{a.module} was imported before the mutants"
    source = Path(spec.origin).read_text()
    skip = {i + 1 for i, line in enumerate(source.splitlines()) if "pragma: no mutate" in line}
    tree = ast.parse(source, spec.origin)
    _, sites = mutate(tree, None, skip, a.only)

    t0 = time.monotonic()
    rc = wait(run_child(a.module, spec.origin, None, a.tests, quiet=False), 600)
    base = time.monotonic() - t0
    if rc != 0:
        print(f"the tests fail without a mutant (exit {rc})", file=sys.stderr)
        return 2
    timeout = max(10.0, 5 * base)
    lines = source.splitlines()
    survivors: list[Site] = []
    killed = 0
    for site in sites:
        mutant, _ = mutate(tree, site.index, skip, a.only)
        try:
            compile(mutant, spec.origin, "exec")
        except (SyntaxError, ValueError):
            continue
        rc = wait(run_child(a.module, spec.origin, mutant, a.tests, quiet=True), timeout)
        if rc == 0:
            survivors.append(site)
        else:
            killed += 1
        print(f"\r{site.index + 1}/{len(sites)} killed {killed} survived {len(survivors)}", end="", file=sys.stderr)
    print(file=sys.stderr)
    total = killed + len(survivors)
    score = 100.0 * killed / total if total else 100.0
    where = f"{a.module}" + (f" ({a.only})" if a.only else "")
    print(f"{where}: {total} mutants, {killed} killed, {len(survivors)} survived: score {score:.1f}%")
    if a.list_survivors:
        for s in survivors:
            print(f"  {Path(spec.origin).name}:{s.line}: {s.what}    | {lines[s.line - 1].strip()[:90]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
