#!/bin/bash
# `kcoral eval` on the GPU host: the KDA tasks with the FLA-wrapping candidate (expect 10/10 and
# ~1.0x), candidates that must fail, and the GPU-only attacks. Writes reports under $OUT.
# Usage: bash scripts/gpu-host-eval.sh BUNDLE.tar.xz SERVER_WHEELS JOB_WHEELS [PHASE]
set -u
out=${OUT:-/tmp/kcoral-eval}
source scripts/gpu-host-serve.sh "$1" "$2" "$3" "$out"
phase=${4:-all}
ev() {  # ev NAME TASK DIR: one evaluation, its report kept as $out/NAME.json
  echo "== eval $2 $3"
  local t0=$SECONDS
  kc eval "$2" "$3" --timeout 1500 --output-dir "$out/$1"; echo "exit code: $? ($((SECONDS - t0)) s)"
}
cands=tests/tasks/kda_candidates
if [ "$phase" = all ] || [ "$phase" = a ]; then
  ev small-fla kda/forward_b1_t512_h8 $cands/fla_wrapper
fi
if [ "$phase" = all ] || [ "$phase" = b ]; then
  for i in 1 2 3; do ev pinned-fla-$i kda/forward_b1_t8192_h96 $cands/fla_wrapper; done
fi
if [ "$phase" = all ] || [ "$phase" = c ]; then
  ev pinned-standard-only kda/forward_b1_t8192_h96 $cands/standard_only
  ev pinned-out-of-tol kda/forward_b1_t8192_h96 $cands/out_of_tolerance
  ev attack-side-stream kda/forward_b1_t512_h8 tests/attacks_gpu/side_stream
  ev attack-replay kda/forward_b1_t512_h8 tests/attacks_gpu/replay_by_pointer
fi
if [ "$phase" = all ] || [ "$phase" = d ]; then
  ev attack-stale kda/forward_b1_t512_h8 tests/attacks_gpu/stale_allocator
  ev attack-l2-persist kda/forward_b1_t8192_h96 tests/attacks_gpu/l2_persist
fi
nvidia-smi --query-compute-apps=pid,used_memory --format=csv
kc gpus --json | python3 -c 'import json,sys; print("drained:", json.load(sys.stdin)["leases"]["drained"])'
