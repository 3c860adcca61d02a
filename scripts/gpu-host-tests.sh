#!/bin/bash
# Every test marked `gpu`, on the GPU host (CI runs the rest): the paths in GPU_TESTS, which
# tests/test_gpu_tests_script.py keeps equal to the files that mark tests `gpu`. The engine, the server's
# wheels and fla-core (in /opt/kcoral-site) come from scripts/gpu-host-prepare.sh, sourced here: on a
# warm machine it finds them in place.
# Usage: bash scripts/gpu-host-tests.sh BUNDLE.tar.xz SERVER_WHEELS JOB_WHEELS [PYTEST ARGS]
set -u
cd "$(dirname "$0")/.."
if [ $# -lt 3 ]; then
  echo "usage: bash scripts/gpu-host-tests.sh BUNDLE.tar.xz SERVER_WHEELS JOB_WHEELS [PYTEST ARGS]" >&2; exit 2
fi
source scripts/gpu-host-prepare.sh "$1" "$2" "$3" > /tmp/kcoral-gpu-tests-prepare.log 2>&1 || {
  echo "preparing the host failed:"; tail -n 20 /tmp/kcoral-gpu-tests-prepare.log; exit 1; }
shift 3
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
