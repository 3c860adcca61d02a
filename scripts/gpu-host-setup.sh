#!/bin/bash
# Prepares a GPU host that has no Docker engine and no registry (the H200 reference host) to run
# kcoral: unpacks the Docker bundle made by ../shared/gpu-host/make-docker-bundle.sh, starts
# dockerd, and installs the server's Python wheels into /tmp/site (kcoral itself: gpu-host-prepare.sh).
# Usage: source scripts/gpu-host-setup.sh BUNDLE.tar.xz WHEEL_DIR
set -u
bundle=${1:?usage: gpu-host-setup.sh BUNDLE.tar.xz WHEEL_DIR}
wheels=${2:?usage: gpu-host-setup.sh BUNDLE.tar.xz WHEEL_DIR}
mkdir -p /tmp/docker-bundle
tar -C /tmp/docker-bundle -xJf "$bundle"
source /tmp/docker-bundle/start-dockerd.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$wheels"/*.whl
export PYTHONPATH=/tmp/site:$PWD
