#!/bin/bash
# Sourced on the GPU host: Docker from the bundle, the server's wheels (/tmp/site), the task reference
# packages (fla-core) in /opt/kcoral-site, the toolchain image; then `job_opts`, how jobs run here for
# `kcoral serve` and `kcoral agent` alike (the host's toolchain mounted into a near-empty image; GPUs
# as device nodes: the host has no NVIDIA container toolkit), `py` and `kc`.
# Usage: source scripts/gpu-host-prepare.sh BUNDLE.tar.xz SERVER_WHEELS JOB_WHEELS
set -u
if ! { [ -x /tmp/docker-bundle/bin/dockerd ] && PATH=/tmp/docker-bundle/bin:$PATH docker info >/dev/null 2>&1; }; then
  source scripts/gpu-host-setup.sh "$1" "$2"
  python3 -m pip install -q --no-index --no-deps --no-compile --target /opt/kcoral-site "$3"/*.whl
else  # a warm machine: the engine and the wheels are there from an earlier call
  export PATH=/tmp/docker-bundle/bin:$PATH PYTHONPATH=/tmp/site:$PWD
fi
# kcoral: this checkout, installed editable into /tmp/site (each call: the checkout is a new copy) by the
# setuptools of SERVER_WHEELS. pyproject's package-dir makes runner/ kcoral.runner, ... through an import
# hook that a .pth file starts; /tmp/site is on PYTHONPATH, not a site dir, so its sitecustomize reads its
# .pth files. Jobs see none of it (/tmp is not mounted, and their PYTHONPATH is job_opts')
PYTHONPATH=/tmp/site python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-compile \
  --upgrade --target /tmp/site -e . || exit 1
echo 'import site; site.addsitedir("/tmp/site")' > /tmp/site/sitecustomize.py
py=$(command -v python3)
python3 -m kcoral images build toolchain
# shellcheck disable=SC2034  # for the script that sources this one
job_opts=(--host-toolchain --python "$py"
  --job-env "PATH=$(dirname "$py"):/usr/local/cuda/bin:/usr/local/bin:/usr/bin:/bin"
  --job-env PYTHONPATH=/opt/kcoral-site:/opt/kcoral-site/nvidia_cutlass_dsl/dsl_packages
  --job-env TRITON_LIBCUDA_PATH=/usr/local/nvidia/lib64)
kc() { python3 -m kcoral "$@"; }
