#!/bin/bash
# The test suite on the real Docker engine (GPU tests are marked `gpu` and run on the GPU host:
# scripts/gpu-host-tests.sh runs them all). Lint and types first: a ruff or mypy finding fails the run.
set -euo pipefail
source "$(dirname "$0")/install.sh"
source scripts/install-browser.sh  # install.sh left us at the checkout's root
ruff check .
ruff format --check .
# mypy's incremental cache outside the checkout, so that a fresh clone (CI's) finds it: a file whose
# content is unchanged is not checked again (~20 s cold, ~1 s warm here); each entry is checked
# against its file's hash, so an edit (or a new mypy) is always checked
export MYPY_CACHE_DIR="${MYPY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kcoral-mypy}"
# mypy reads kcoral as installed (runner/ as kcoral/runner, ...) through links made here (pyproject's mypy_path)
python3 scripts/layout.py --view build/mypy
mypy
# Two lanes, each naming its 15 slowest tests (where CI time goes). First the files marked `concurrent`
# (every file with no engine, and the engine's files that assert no timing: pyproject's markers), two
# at a time (pytest-xdist, a file to a worker); then the rest one at a time: an evaluation's verdict
# depends on a quiet host, which a test beside it would not leave. A lane with nothing selected (a
# path given on the command line that holds none of its files) is not a failure.
lane() {
  local rc=0
  python3 -m pytest -q -p no:cacheprovider --durations=15 "$@" || rc=$?
  [ "$rc" -eq 5 ] && rc=0  # no tests collected
  return "$rc"
}
# (pytest-benchmark, where a machine has it, refuses to run under xdist with a warning, which fails the run)
# The tests marked `nightly` (slow, checking what changes seldom) run in scripts/test-nightly.sh instead.
lane -n 2 --dist loadfile -p no:benchmark -m "concurrent and not gpu and not nightly" "$@"
lane -m "not concurrent and not gpu and not nightly" "$@"
