#!/bin/bash
# `kcoral timeline` on the GPU host, through the server and a job container (issue 34, item 2): a program
# with two streams and a deliberate 20 ms host gap on the second (bench/timeline_two_streams); the
# summary must show that gap between the second stream's kernels. Prints PASS or FAIL last.
# Usage: bash scripts/gpu-host-timeline.sh BUNDLE.tar.xz SERVER_WHEELS JOB_WHEELS
set -u
out=${OUT:-/tmp/kcoral-timeline}
source scripts/gpu-host-serve.sh "$1" "$2" "$3" "$out"
kc doctor | grep -i timeline
t0=$SECONDS
kc timeline --send bench/timeline_two_streams --output-dir "$out/tl" --timeout 300 -- python two_streams.py
echo "exit code: $? ($((SECONDS - t0)) s)"
trace="$out/tl/timeline.trace.json"
ls -l "$trace" || { echo FAIL: no trace; exit 1; }
kc timeline summarize "$trace" --json > "$out/summary.json" || { echo FAIL: no summary; exit 1; }
kc timeline plot "$trace" -o "$out/timeline.png"
python3 - "$out/summary.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
# the second stream: two kernels (relu, sigmoid) 20 ms apart at least; the first: four sgemms back to back
# (the warm-up's kernels are on the default stream, a third)
gapped = [s for s in doc["streams"] if s["kernels"] == 2 and s["largest_gap"]["gap"] >= 20_000]
busy = [s for s in doc["streams"] if s["kernels"] == 4]
print("streams:", [(s["stream"], s["kernels"], s["gaps"]["max"]) for s in doc["streams"]])
ok = len(doc["streams"]) >= 2 and gapped and busy and busy[0]["gaps"]["median"] < 1_000
print("PASS" if ok else "FAIL: the summary does not show two streams with the 20 ms gap on one")
sys.exit(0 if ok else 1)
PY
