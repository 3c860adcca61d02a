"""What an install puts on a machine: one top-level name (kcoral), a client without the server's
packages, and the server behind the ``server`` extra."""

from __future__ import annotations

import ast
import csv
import os
import shutil
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import pytest

#: no timing asserted, nothing done to the engine that another file would see (scripts/test.sh)
pytestmark = pytest.mark.concurrent

ROOT = Path(__file__).resolve().parents[1]
PARTS = ("runner", "cli", "tasks", "profiling", "images")
#: where kcoral's own code is written (an install maps the parts into kcoral: runner/ is kcoral.runner)
SOURCES = [*PARTS, "tests", "bench", "scripts", "examples"]


def _imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def test_no_code_imports_a_part_by_its_bare_name() -> None:
    bare = [
        f"{p.relative_to(ROOT)}:{line} imports {name}"
        for folder in SOURCES
        for p in sorted((ROOT / folder).rglob("*.py"))
        for line, name in _imports(p)
        if name.split(".")[0] in PARTS
    ]
    assert not bare, "import kcoral.<part>, not <part>:\n" + "\n".join(bare)


def _package_folders() -> dict[str, Path]:
    """The folder of each package pyproject lists, package-dir applied (kcoral.runner.web is runner/web)."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapped = {"kcoral": ROOT / "kcoral", **{name: ROOT / folder for name, folder in setuptools["package-dir"].items()}}
    assert sorted(mapped) == sorted(["kcoral", *(f"kcoral.{p}" for p in PARTS)]), mapped
    folders = {}
    for package in setuptools["packages"]:
        base = max((m for m in mapped if package == m or package.startswith(m + ".")), key=len)
        folders[package] = mapped[base].joinpath(*package.removeprefix(base).split(".")[1:])
    return folders


def test_every_folder_of_kcoral_and_its_parts_that_holds_a_file_is_a_listed_package() -> None:
    """setuptools installs the packages pyproject lists and finds none itself: a folder left off the list
    (a new subpackage, a new task) would be missing from the wheel and from the editable install."""
    listed = _package_folders()
    missing = [f"{p} does not exist" for p, folder in listed.items() if not folder.is_dir()]
    holding = {
        folder
        for top in [ROOT / "kcoral", *(ROOT / p for p in PARTS)]
        for folder in [top, *top.rglob("*")]
        if folder.is_dir() and "__pycache__" not in folder.parts and any(f.is_file() for f in folder.iterdir())
    }
    unlisted = sorted(str(f.relative_to(ROOT)) for f in holding - set(listed.values()))
    assert not missing and not unlisted, f"not a folder: {missing}; not in pyproject's packages: {unlisted}"


def test_every_imported_package_is_declared() -> None:
    """Third-party names imported by the installed packages are in pyproject's dependencies or extras
    (torch, triton, numpy are the job images', imported only inside job containers)."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {_dist_name(d) for d in project["dependencies"]}
    declared |= {_dist_name(d) for extra in project["optional-dependencies"].values() for d in extra}
    module_to_dist = {"nvidia_smi": "nvidia-ml-py", "pynvml": "nvidia-ml-py", "yaml": "pyyaml"}
    in_jobs = {"torch", "triton", "numpy", "fla", "cutlass", "matplotlib", "solution"}  # solution: the submission
    optional = {"click"}  # imported under try: typer's own parser, where typer does not vendor it
    stdlib = set(sys.stdlib_module_names) | {"kcoral", "__future__"}
    undeclared = set()
    for folder in PARTS:
        for path in (ROOT / folder).rglob("*.py"):
            for _, name in _imports(path):
                top = name.split(".")[0]
                if top in stdlib or top in in_jobs or top in optional:
                    continue
                if module_to_dist.get(top, top).replace("_", "-") not in declared:
                    undeclared.add(f"{top} ({path.relative_to(ROOT)})")
    assert not undeclared, sorted(undeclared)


def _dist_name(requirement: str) -> str:
    for stop in "<>=[; ":
        requirement = requirement.split(stop)[0]
    return requirement.lower().replace("_", "-")


@pytest.fixture(scope="module")
def client_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with ``pip install <this checkout>``: the client only."""
    where = tmp_path_factory.mktemp("client-venv")
    source = tmp_path_factory.mktemp("source") / "kcoral"  # pip builds in the tree it is given: not in ours
    shutil.copytree(
        ROOT,
        source,
        symlinks=True,
        ignore=shutil.ignore_patterns(
            ".git", "build", "*.egg-info", "__pycache__", ".*_cache", "kcoral-data", "kcoral-out", "tests", "bench"
        ),
    )
    # no pip of its own (ensurepip took ~6 s of the ~18): this interpreter's pip installs into it
    venv.create(where, with_pip=False)
    pip = [sys.executable, "-m", "pip", "--python", str(where / "bin" / "python"), "--disable-pip-version-check"]
    done = subprocess.run(
        [*pip, "install", "-q", str(source)],
        capture_output=True,
        text=True,
        timeout=420,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return where


def test_client_install_has_no_server_packages_and_no_generic_names(client_venv: Path) -> None:
    py = str(client_venv / "bin" / "python")
    probe = (
        "import importlib.util as u; print(' '.join(m for m in "
        "('fastapi', 'uvicorn', 'docker', 'pynvml', 'starlette', 'cli', 'runner', 'tasks', 'profiling', 'images')"
        " if u.find_spec(m)))"
    )
    done = subprocess.run([py, "-c", probe], capture_output=True, text=True, timeout=60, cwd=client_venv)
    assert done.returncode == 0 and done.stdout.strip() == "", done.stdout + done.stderr


def test_client_install_runs_the_client(client_venv: Path) -> None:
    kcoral = str(client_venv / "bin" / "kcoral")
    env = {**os.environ, "KCORAL_REMOTE": "http://127.0.0.1:9"}
    helped = subprocess.run([kcoral, "python", "--help"], capture_output=True, text=True, timeout=60, env=env)
    assert helped.returncode == 0 and "--send" in helped.stdout, helped.stderr
    refused = subprocess.run([kcoral, "tasks"], capture_output=True, text=True, timeout=60, env=env)
    assert refused.returncode == 69 and "cannot reach http://127.0.0.1:9" in refused.stderr, refused.stderr
    served = subprocess.run([kcoral, "serve", "--port", "1"], capture_output=True, text=True, timeout=60, env=env)
    assert served.returncode == 2 and "pip install -e '.[server]' in a kcoral checkout" in served.stderr, served.stderr
    assert "Traceback" not in served.stderr + refused.stderr


def test_the_wheel_carries_the_task_manifests(client_venv: Path) -> None:
    site = next((client_venv / "lib").glob("python3*/site-packages"))
    manifests = sorted(p.relative_to(site).as_posix() for p in (site / "kcoral" / "tasks").rglob("manifest.json"))
    assert manifests == sorted(
        f"kcoral/{p.relative_to(ROOT).as_posix()}" for p in (ROOT / "tasks").rglob("manifest.json")
    ), manifests
    assert (site / "kcoral" / "images" / "cpu" / "Dockerfile").is_file()
    # the web page's templates and vendored scripts (runner.web)
    for name in ("templates/job.html", "static/htmx-2.0.4.min.js", "static/uPlot-1.6.31.iife.min.js"):
        assert (site / "kcoral" / "runner" / "web" / name).is_file(), name


def test_the_install_is_every_module_under_kcoral_and_nothing_beside(client_venv: Path) -> None:
    """What pip recorded for kcoral-bench: each module of kcoral/ and of the parts at its import path
    (runner/x.py at kcoral/runner/x.py), and no top-level name but kcoral (and the command)."""
    site = next((client_venv / "lib").glob("python3*/site-packages"))
    record = next(site.glob("kcoral_bench-*.dist-info")) / "RECORD"
    installed = {row[0] for row in csv.reader(record.read_text().splitlines())}
    command = [f for f in installed if f.startswith("../") and f.endswith("/bin/kcoral")]
    beside = sorted(f for f in set(installed) - set(command) if f.split("/")[0] not in ("kcoral", record.parent.name))
    assert len(command) == 1 and not beside, (command, beside)
    wanted = {f"kcoral/{p.relative_to(ROOT / 'kcoral').as_posix()}" for p in (ROOT / "kcoral").rglob("*.py")} | {
        f"kcoral/{p.relative_to(ROOT).as_posix()}" for part in PARTS for p in (ROOT / part).rglob("*.py")
    }
    assert not sorted(wanted - installed), sorted(wanted - installed)


def test_the_distribution_is_kcoral_bench_and_its_command_kcoral(client_venv: Path) -> None:
    """`kcoral` on PyPI is another project (the KCoral engine): this one installs as kcoral-bench,
    imports as kcoral and runs as kcoral."""
    site = next((client_venv / "lib").glob("python3*/site-packages"))
    assert [p.name.split("-")[0] for p in site.glob("kcoral*.dist-info")] == ["kcoral_bench"]
    probe = "import importlib.metadata as m; d = m.distribution('kcoral-bench'); print(d.metadata['Name'])"
    py = str(client_venv / "bin" / "python")
    done = subprocess.run([py, "-c", probe], capture_output=True, text=True, timeout=60, cwd=client_venv)
    assert done.stdout.strip() == "kcoral-bench", done.stdout + done.stderr
    assert (client_venv / "bin" / "kcoral").is_file()
