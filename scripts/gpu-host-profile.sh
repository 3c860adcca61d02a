#!/bin/bash
# `kcoral ncu` and `kcoral iket` on the GPU host, through the server and job containers.
# Needs the cutlass-dsl site (nvidia-cutlass-dsl 4.8.1 + libs + nvdisasm, installed for Python 3.12,
# run-iket's shebang set to `/usr/bin/env python3`) as xz'd tar parts in SITE_PARTS_DIR (cat'ed in order).
# Usage: bash scripts/gpu-host-profile.sh BUNDLE.tar.xz SERVER_WHEELS JOB_WHEELS SITE_PARTS_DIR
set -u
out=${OUT:-/tmp/kcoral-profile}
mkdir -p /opt/kcoral-site
if [ ! -d /opt/kcoral-site/nvidia_cutlass_dsl ]; then
  cat "$4"/cdsl-site.tar.xz.part* | xz -d | tar -C /opt/kcoral-site -xf - || exit 1
fi
install -m 755 /opt/kcoral-site/bin/run-iket /usr/local/bin/run-iket

source scripts/gpu-host-serve.sh "$1" "$2" "$3" "$out"
kc gpus
echo "== ncu"
t0=$SECONDS
kc ncu --send examples/ncu_capture -o "$out/softmax.ncu-rep" --set full --launch-count 1 \
  --kernel-name softmax_kernel --timeout 600 -- python capture.py
echo "exit code: $? ($((SECONDS - t0)) s)"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
"$ncu" --import "$out/softmax.ncu-rep" --page details > "$out/softmax-details.txt" 2>&1
echo "ncu --import exit $?"; grep -E "softmax_kernel|Duration|Memory Throughput|Compute \(SM\) Throughput|Registers Per|Achieved Occupancy" "$out/softmax-details.txt"
echo "== iket"
t0=$SECONDS
kc iket --send examples/iket_capture --output-dir "$out/iket" -e TILES=16 --timeout 600 \
  -- profile -- python capture.py
echo "exit code: $? ($((SECONDS - t0)) s)"
find "$out/iket" -type f -printf '%s %P\n'
trace=$(ls "$out"/iket/iket_pid_*.trace.json 2>/dev/null | head -1)
if [ -n "$trace" ]; then
  cp "$trace" "$out/trace.json"
  kc iket summarize "$trace" --marker tile
  kc iket plot "$trace" -o "$out/timeline.png"
fi
pftrace=$(find "$out/iket" -name '*.pftrace' | head -1)  # run-iket's Perfetto trace (--postprocess all)
if [ -n "$pftrace" ]; then
  cp "$pftrace" "$out/trace.pftrace"
  echo "== summarize $pftrace"
  kc iket summarize "$pftrace" --marker tile
fi
nvidia-smi --query-compute-apps=pid,used_memory --format=csv
