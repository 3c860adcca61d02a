#!/bin/bash
# End to end on the GPU host (no Docker engine, no registry, no toolkit): start dockerd from the
# bundle, build the toolchain image, serve, run `kcoral python` jobs, check the GPU is clean, run the
# gpu-marked tests. Writes logs under $OUT when set.
# Usage: bash scripts/gpu-host-e2e.sh BUNDLE.tar.xz SERVER_WHEELS JOB_WHEELS
set -u
out=${OUT:-/tmp/kcoral-e2e}
source scripts/gpu-host-serve.sh "$1" "$2" "$3" "$out"
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
bash scripts/gpu-host-tests.sh "$1" "$2" "$3" 2>&1 | tail -15
cp /tmp/dockerd.log "$out/" 2>/dev/null
