#!/bin/bash
# Every test marked `gpu`, on the GPU host (CI runs the rest): the paths in GPU_TESTS, which
# tests/test_gpu_tests_script.py keeps equal to the files that mark tests `gpu`. fla-core comes from
# /opt/kcoral-site (scripts/gpu-host-prepare.sh puts it there).
# Usage: bash scripts/gpu-host-tests.sh [PYTEST ARGS]
set -u
cd "$(dirname "$0")/.."
GPU_TESTS=(tests/gpu tests/tasks/test_kda_gpu.py tests/tasks/test_autotune_gpu.py)
# each file in a pytest process of its own: a module that uses CUDA in the test process (graph capture,
# the KDA oracle) leaves a context there, which a later module's in-process server would find on the
# GPU after its job and drain the GPU for (it looks for processes left by the job)
rc=0
for f in $(find "${GPU_TESTS[@]}" -name 'test_*.py' | sort); do
  echo "== $f"
  PYTHONPATH=/opt/kcoral-site:${PYTHONPATH:-} python3 -m pytest -o addopts='' -m gpu -q -p no:cacheprovider "$f" "$@" || rc=1
done
exit $rc
