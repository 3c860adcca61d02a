#!/bin/bash
# Builds the Ray layer an offline GPU host needs for `kcoral agent --ray` / `kcoral serve --ray`
# (docs/cluster.md): ray 2.60.0 and the runtime dependencies the host's Python may lack
# (not numpy, not torch), installed for CPython PY_VERSION (default 3.12) on x86-64 into one site dir,
# pruned to what Ray Core needs with the dashboard off (no Java jars, no dashboard web build, no
# rllib/tune/train/serve/data/llm/air, no tests, stubs or Cython headers; the three big binaries
# stripped of their symbol tables), `bin/ray`'s shebang made `/usr/bin/env python3`; as one
# tar.xz split into parts of at most 30 MiB in DEST/ray/ (DEST defaults to .gpuhost, git-ignored).
# On the host: cat DEST/ray/ray-site.tar.xz.part* | xz -d | tar -C SITE -xf -, then SITE first on
# PYTHONPATH and SITE/bin on PATH (scripts/gpu-host-cluster.sh does so).
# Usage: bash scripts/make-gpuhost-ray.sh [DEST] [PY_VERSION]     (on a dev machine that reaches PyPI)
set -euo pipefail
dest=${1:-.gpuhost}
pyv=${2:-3.12}
out=$dest/ray
[ "$pyv" = 3.12 ] || out=$dest/ray-py$pyv  # another Python's layer, for trying the pruned site locally
exclude=$(git rev-parse --git-path info/exclude)  # a worktree's .git is a file: its repository's
grep -qx '/.gpuhost/' "$exclude" 2>/dev/null || echo '/.gpuhost/' >> "$exclude"
if [ -f "$out/ray-site.tar.xz.partaa" ]; then
  echo "$out is there already (remove it to build it again)"; du -sh "$out"; exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
platforms=(--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
# ray's Requires-Dist without extras, and theirs (what `pip download ray==2.60.0` resolves for 3.12)
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$pyv" --implementation cp "${platforms[@]}" \
  -d "$tmp/whl" ray==2.60.0 click==8.5.1 filelock==4.3.1 jsonschema==4.26.0 jsonschema-specifications==2025.9.1 \
  referencing==0.37.0 rpds-py==2026.9.1 attrs==26.1.0 msgpack==1.2.4 packaging==26.4 protobuf==7.36.2 \
  pyyaml==6.0.4 requests==2.34.2 charset-normalizer==3.5.3 idna==3.20 urllib3==2.8.0 certifi==2026.10.19.post1 \
  typing-extensions==4.16.0
python3 -m pip install -q --no-deps --no-compile --only-binary=:all: --python-version "$pyv" --implementation cp \
  "${platforms[@]}" --target "$tmp/site" "$tmp"/whl/*.whl
site=$tmp/site
before=$(du -sm "$site" | cut -f1)
# Ray Core with the dashboard off: `ray start --head --include-dashboard=false`, ray.init, actors,
# `ray stop`. The minimal dashboard process and the runtime-env agent still run (kept: ray/dashboard's
# Python, ray/_private/runtime_env and its vendored aiohttp); the CLI's `ray serve` group is optional.
rm -rf "$site"/ray/{jars,dashboard/client,rllib,tune,train,serve,data,llm,air} "$site"/bin/{serve,tune}
find "$site" -depth \( -name tests -o -name __pycache__ \) -type d -exec rm -rf {} +
find "$site" \( -name '*.pyi' -o -name '*.pxd' -o -name '*.js.map' \) -delete
find "$site" -depth -type d -empty -delete
if command -v strip >/dev/null; then  # symbol tables only: the dynamic symbols stay
  strip --strip-unneeded "$site"/ray/_raylet.so "$site"/ray/core/src/ray/gcs/gcs_server \
    "$site"/ray/core/src/ray/raylet/raylet
fi
sed -i '1s|.*|#!/usr/bin/env python3|' "$site"/bin/*
echo "ray site for Python $pyv: ${before} MiB installed, $(du -sm "$site" | cut -f1) MiB pruned"
mkdir -p "$out"
tar -C "$site" -cf - . | xz -9 -T2 | split -b 30M -a 2 - "$out/ray-site.tar.xz.part"
ls -l "$out"; du -sh "$out"
