#!/bin/bash
# The test suite on the real Docker engine (GPU tests are marked `gpu` and run on the GPU host:
# see scripts/gpu-host-e2e.sh). Lint and types first: a ruff or mypy finding fails the run.
set -euo pipefail
source "$(dirname "$0")/install.sh"
ruff check .
ruff format --check .
mypy
python3 -m pytest -q -p no:cacheprovider "$@"
