#!/bin/bash
# End to end on the GPU host (no Docker engine, no registry, no toolkit): start dockerd from the
# bundle, build the toolchain image, serve, run `kcoral python` jobs, check the GPU is clean, run the
# gpu-marked tests. Writes logs under $OUT when set.
# Usage: bash scripts/gpu-host-e2e.sh BUNDLE.tar.xz WHEEL_DIR
set -u
out=${OUT:-/tmp/kcoral-e2e}; mkdir -p "$out"
source scripts/gpu-host-setup.sh "$1" "$2"
py=$(command -v python3)
kc() { python3 -m cli "$@"; }
python3 -m images.build toolchain
setsid python3 -m runner --host-toolchain --python "$py" --data-dir /tmp/kc --port 8901 \
  --job-env "PATH=$(dirname "$py"):/usr/local/cuda/bin:/usr/local/bin:/usr/bin:/bin" >"$out/server.log" 2>&1 &
for _ in $(seq 1 100); do curl -sf http://127.0.0.1:8901/v1/health >/dev/null && break; sleep 0.2; done
export KCORAL_REMOTE=http://127.0.0.1:8901
echo "== kcoral gpus"; kc gpus
echo "== kcoral python examples/hello"
kc python --send examples/hello --timeout 300 --output-dir "$out/hello" -- main.py; echo "exit code: $?"
cat "$out/hello/result.json"; echo
echo "== the job's view of the GPUs"
kc python --send examples/hello -c 'import torch, os; print("visible GPUs:", torch.cuda.device_count(), torch.cuda.get_device_name(0)); print("uid", os.getuid())'
echo "== after the jobs"; nvidia-smi --query-compute-apps=pid,used_memory --format=csv
nvidia-smi --query-gpu=index,memory.used --format=csv
kc gpus --json | python3 -c 'import json,sys; h=json.load(sys.stdin); print("drained:", h.get("leases",{}).get("drained"))'
kc jobs
echo "== gpu tests"
python3 -m pytest -o addopts='' -m gpu tests/gpu -q -p no:cacheprovider 2>&1 | tail -15
cp /tmp/dockerd.log "$out/" 2>/dev/null
