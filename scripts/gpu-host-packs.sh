#!/bin/bash
# Issue 32's acceptance run on the GPU host: the problems of bench/packs/h200 (KernelBench level 1 and 2
# files, GPU MODE pmpp-style folders) served beside kcoral's own tasks and judged by the supervisor.
# For each problem: `kcoral init` writes its native submission, `kcoral eval` judges it (expected PASS,
# 1.0 inside the speedup's interval), then the same submission made wrong on purpose (expected FAIL with
# a reason); one line per evaluation, then a markdown table, $OUT/packs.md and $OUT/packs.json
# (bench/packs_acceptance.py), each evaluation's report under $OUT/reports/.
# Usage: OUT=/tmp/x bash scripts/gpu-host-packs.sh BUNDLE.tar.xz SERVER_WHEELS JOB_WHEELS [SHARD]
#   SHARD: I/N, every Nth problem of the sorted list from the Ith (default 1/1: all of them)
#   PACKS_DEADLINE_S=S: from this script's start, no evaluation is started that would end after S s
#     (by the longest so far); the table is printed all the same, the rest as "not run"
#   PACKS_REMOTE=URL: judge on that running server instead (no GPU host set-up; the CPU rehearsal)
#   PACKS_TIMING=JSON: fields merged into the pack's timing in this checkout's kcoral-pack.json before the
#     server reads it (the host's copy: e.g. '{"batch": 8, "max_reps": 300}' to time the pack in batches)
#   PACKS_PREFIX="P ...": only the problems whose ids start with one of these (e.g. "kernelbench/level2")
set -u
out=${OUT:-/tmp/kcoral-packs}
t0=$SECONDS
if [ -n "${PACKS_TIMING:-}" ] && [ -z "${PACKS_REMOTE:-}" ]; then
  python3 - bench/packs/h200/kcoral-pack.json "$PACKS_TIMING" <<'PY' || exit 2
import json, sys
path, extra = sys.argv[1], json.loads(sys.argv[2])
pack = json.load(open(path))
pack["timing"].update(extra)
json.dump(pack, open(path, "w"), indent=2)
print("pack timing:", json.dumps(pack["timing"]))
PY
fi
if [ -n "${PACKS_REMOTE:-}" ]; then
  mkdir -p "$out"; export KCORAL_REMOTE=$PACKS_REMOTE
else
  export KCORAL_TASKS_DIRS="tasks bench/packs/h200"
  source scripts/gpu-host-serve.sh "$1" "$2" "$3" "$out"
  nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,temperature.gpu,power.draw --format=csv
fi
deadline=0
if [ -n "${PACKS_DEADLINE_S:-}" ]; then
  deadline=$((PACKS_DEADLINE_S - (SECONDS - t0))); [ "$deadline" -lt 1 ] && deadline=1
fi
echo "set-up took $((SECONDS - t0)) s; evaluations until $deadline s from now (0: no deadline)"
prefixes=()
for p in ${PACKS_PREFIX:-}; do prefixes+=(--prefix "$p"); done
python3 bench/packs_acceptance.py --remote "$KCORAL_REMOTE" --out "$out" --shard "${4:-1/1}" --deadline-s "$deadline" \
  ${prefixes[@]+"${prefixes[@]}"}
rc=$?
if [ -z "${PACKS_REMOTE:-}" ]; then
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv
  python3 -m kcoral gpus --json | python3 -c 'import json,sys; print("drained:", json.load(sys.stdin)["leases"]["drained"])'
fi
echo "packs: exit $rc after $((SECONDS - t0)) s (0: every problem as expected); $out/packs.md, $out/packs.json"
exit $rc
