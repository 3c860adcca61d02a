#!/bin/bash
# Builds what a GPU host without Docker, registry or network needs, into DEST (default .gpuhost,
# git-ignored): the Docker engine bundle (xz -9e, ~38 MB), the server's wheels for the host's
# Python 3.12 (whl/, with the setuptools that installs this checkout there: scripts/gpu-host-prepare.sh),
# the task reference packages jobs import (jobwhl/: fla-core), and the IKET
# layer: nvidia-cutlass-dsl 4.8.1 with its cu13 libs and nvdisasm installed for Python 3.12, run-iket's
# shebang made `/usr/bin/env python3`, as one xz'd tar (~68 MiB) split into 20 MiB parts, so
# that they travel in two calls beside the rest (a call carries at most 64 MiB): p1/ holds the first
# part, p2/ the others. scripts/gpu-host-profile.sh joins them on the host. The Ray layer for
# `kcoral agent --ray` (DEST/ray/) is a step of its own: scripts/make-gpuhost-ray.sh.
# Usage: bash scripts/make-gpuhost-cargo.sh [DEST]     (on a Debian dev machine with apt and PyPI)
set -euo pipefail
dest=${1:-.gpuhost}
mkdir -p "$dest/whl" "$dest/jobwhl"
exclude=$(git rev-parse --git-path info/exclude)  # a worktree's .git is a file: its repository's
grep -qx '/.gpuhost/' "$exclude" 2>/dev/null || echo '/.gpuhost/' >> "$exclude"
if [ ! -f "$dest/docker-bundle.tar.xz" ]; then
  tmp=$(mktemp -d)
  bash ../shared/gpu-host/make-docker-bundle.sh "$tmp/bundle.tar.xz"
  mkdir "$tmp/x" && tar -C "$tmp/x" -xJf "$tmp/bundle.tar.xz"
  tar -C "$tmp/x" -cf - . | xz -9e -T2 > "$dest/docker-bundle.tar.xz"
  rm -rf "$tmp"
fi
get() {  # get DIR NAME==VERSION...: manylinux/py3 wheels for CPython 3.12 on x86-64, no dependencies
  local dir=$1; shift
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d "$dir" "$@"
}
get "$dest/whl" fastapi==0.165.0 starlette==1.10.0 pydantic==2.13.4 pydantic-core==2.46.4 uvicorn==0.54.0 \
  docker==7.1.0 annotated-types==0.7.0 typing-inspection==0.4.2 annotated-doc==0.0.7 \
  typing-extensions==4.16.0 opentelemetry-api==1.45.2 httptools==0.9.0 uvloop==0.23.0 typer==0.28.0 shellingham==1.5.4 \
  setuptools==80.9.0 cryptography==48.0.0 cffi==2.0.0 pycparser==3.12
get "$dest/jobwhl" fla-core==0.6.0
if [ ! -f "$dest/p1/cdsl-site.tar.xz.partaa" ]; then
  tmp=$(mktemp -d)
  get "$tmp/whl" nvidia-cutlass-dsl==4.8.1 nvidia-cutlass-dsl-libs-base==4.8.1 nvidia-cutlass-dsl-libs-core==4.8.1 \
    nvidia-cutlass-dsl-libs-cu13==4.8.1 nvidia-cuda-nvdisasm==13.5.37
  python3 -m pip install -q --no-deps --no-compile --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --target "$tmp/site" "$tmp"/whl/*.whl
  sed -i '1s|.*|#!/usr/bin/env python3|' "$tmp/site/bin/run-iket"
  mkdir -p "$dest/p1" "$dest/p2"
  tar -C "$tmp/site" -cf - . | xz -9 -T2 | split -b 20M -a 2 - "$tmp/cdsl-site.tar.xz.part"
  mv "$tmp/cdsl-site.tar.xz.partaa" "$dest/p1/" && mv "$tmp"/cdsl-site.tar.xz.part* "$dest/p2/"
  rm -rf "$tmp"
fi
du -sh "$dest"/*
