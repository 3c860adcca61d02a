#!/bin/bash
# `kcoral eval` on the GPU host: the KDA tasks with the FLA-wrapping candidate (expect 10/10 and
# ~1.0x), candidates that must fail, and the GPU-only attacks (each must fail, or pass with no gain).
# Writes reports under $OUT; every evaluation ends with an `expected ...: OK|UNEXPECTED` line.
# Usage: bash scripts/gpu-host-eval.sh BUNDLE.tar.xz SERVER_WHEELS JOB_WHEELS [PHASES: all, or some of
#        a,b,c,p,o,w,s separated by commas; w: the template on the pinned task three more times, for the spread;
#        s: the template on the pinned task five times (the first is cold on a fresh host), then the work-twice candidate;
#        i: issue 29's storm candidate, A/A calibration (bench/calibration.py) and the work-twice candidate;
#        k: issue 29's second step: kcoral calibrate, then A/A requests with the floor (CAL_N, CAL_APART, AA_N, STORM);
#        p: the pinned task alone (the template three times, the work-twice candidate); o: bench/overhead.py;
#        q: side streams in the field's formats, on the pack's problems (KCORAL_TASKS_DIRS="tasks bench/packs/h200");
#        e: answers before the work is done, per call (the small task) and in batch mode (the pinned task);
#        v: where the spread between A/A requests comes from (bench/variance_source.py, each --vary in VARY:
#        default "buffers scratch"; VARY_ARGS, default "--pairs 4 --instances 4 --rounds 30")]
set -u
out=${OUT:-/tmp/kcoral-eval}
source scripts/gpu-host-serve.sh "$1" "$2" "$3" "$out"
phase=${4:-all}
has() { [ "$phase" = all ] || [[ ",$phase," == *",$1,"* ]]; }
#: an attack that passes must not beat the honest FLA wrapper by more than this (its 95% CI spans ~±4%)
NO_GAIN=1.05
ev() {  # ev NAME TASK DIR EXPECT (pass | fail | no-gain): one evaluation, its report kept in $out/NAME/
  echo "== eval $2 $3"
  local t0=$SECONDS rc
  kc eval "$2" "$3" --output-dir "$out/$1"; rc=$?
  echo "exit code: $rc ($((SECONDS - t0)) s)"
  local judge; judge=$(ls -t /tmp/kc/jobs/*/eval/judge.log 2>/dev/null | head -n 1)
  [ -n "$judge" ] && mkdir -p "$out/$1" && cp "$judge" "$out/$1/judge.log"  # with where the time went
  grep -h " took: " "$judge" 2>/dev/null | cut -c1-300
  tail -n 4 "$judge" 2>/dev/null | cut -c1-600
  python3 - "$out/$1/report.json" "$rc" "$4" "$NO_GAIN" <<'PY'
import json, sys
path, rc, expect, limit = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
report = {}
try:
    report = json.load(open(path))
except (OSError, ValueError):
    pass
speedup = report.get("summary", {}).get("speedup")
# a fail must be the candidate's failure (a failed check or a flag), never an infrastructure error
failed = rc == 1 and (report.get("holdout") == "FAIL" or report.get("flags")
                      or any(w.get("verdict") != "PASS" for w in report.get("workloads", [])))
for w in report.get("workloads", []):
    if w.get("timed"):
        print("timed:", {k: w.get(k) for k in ("verdict", "baseline_ms", "kernel_ms", "speedup", "speedup_lo",
                                                "speedup_hi", "samples", "protocol_ms", "idle_cpu_ms", "reason")})
print("flags:", report.get("flags"), "holdout:", report.get("holdout"), report.get("holdout_failure", ""))
ok = {"pass": rc == 0, "fail": bool(failed),
      "no-gain": bool(failed) or rc == 3 or (rc == 0 and speedup is not None and speedup <= limit)}[expect]
print(f"expected {expect}: {'OK' if ok else 'UNEXPECTED'} (exit {rc}, speedup {speedup})")
PY
}
cands=tests/tasks/kda_candidates
# the task's template (the baseline's fla-core call) as a submission: what `kcoral init` writes
template=$(mktemp -d)
cp tasks/kda/forward_b1_t8192_h96/template.py "$template/solution.py"
attacks=tests/attacks_gpu
small=kda/forward_b1_t512_h8
pinned=kda/forward_b1_t8192_h96
if has a; then
  ev small-fla $small $template pass
  ev pinned-fla-1 $pinned $template pass
  ev pinned-twice $pinned $cands/fla_twice pass
  ev pinned-fla-2 $pinned $template pass
fi
if has b; then
  ev attack-side-stream $small $attacks/side_stream no-gain
  ev attack-early-answer $small $attacks/early_answer no-gain
  ev attack-replay $small $attacks/replay_by_pointer fail
  ev attack-stale $small $attacks/stale_allocator fail
  ev attack-gpu-hog $small $attacks/gpu_hog fail
fi
if has c; then
  ev pinned-clone $pinned $cands/baseline_clone pass
  ev pinned-fla-3 $pinned $template pass
  ev pinned-standard-only $pinned $cands/standard_only fail
  ev attack-l2-persist $pinned $attacks/l2_persist no-gain
fi
if has p; then  # the pinned task only: the template three times (the spread) and the work-twice candidate
  ev pinned-fla-1 $pinned $template pass
  ev pinned-twice $pinned $cands/fla_twice pass
  ev pinned-fla-2 $pinned $template pass
  ev pinned-fla-3 $pinned $template pass
fi
if has o; then  # per-job overhead: a trivial job through the library and the CLI against a bare `docker run`
  # of the same image, interpreter, read-only host mounts and GPU device nodes. The wheels went in
  # with --no-compile and this host does not write bytecode on import: compile them first, as
  # `pip install` does on a user's machine (or every command compiles pydantic & co. again)
  python3 -m compileall -q -j 0 /tmp/site cli runner tasks profiling images >/dev/null
  mounts=""; for d in /usr /lib /lib64 /bin /sbin /opt /etc; do [ -d $d ] && mounts+=" -v $d:$d:ro"; done
  devs=""; for d in /dev/nvidia0 /dev/nvidiactl /dev/nvidia-uvm /dev/nvidia-uvm-tools; do [ -e $d ] && devs+=" --device $d"; done
  python3 bench/overhead.py --remote "$KCORAL_REMOTE" --image kcoral-toolchain:latest --python "$(command -v python3)" \
    --bare-args "--network none$mounts$devs" --runs 10 --clients 2 --jobs-per-client 3 --json "$out/overhead.json"
fi
if has w; then
  for i in 3 4 5; do ev pinned-fla-w$i $pinned $template pass; done
fi
if has i; then  # issue 29: the interrupt storm as a GPU candidate, then A/A requests (AA_N, default 20; AA_COTENANT
  # more beside a co-tenant job that keeps its CPU slot's cores busy), then the work-twice candidate
  ev pinned-fla-1 $pinned $template pass
  if ! grep -q '"speedup"' "$out/pinned-fla-1/report.json" 2>/dev/null; then
    echo "the template did not get a score: the rest of phase i would say nothing more"; tail -n 30 "$out/pinned-fla-1/judge.log"
    exit 1
  fi
  storm=$(mktemp -d)
  cp $attacks/irq_storm/solution.py tests/attacks/candidates/irq_storm/storm.py "$storm/"
  cp tasks/kda/forward_b1_t8192_h96/template.py "$storm/template.py"
  ev attack-irq-storm $pinned "$storm" no-gain
  grep -h "STORM-" /tmp/kc/jobs/*/log* 2>/dev/null | sort | uniq -c | head -5
  python3 bench/calibration.py --remote "$KCORAL_REMOTE" --task $pinned -n "${AA_N:-20}" --json "$out/aa-pinned.json" | tail -22
  if [ "${AA_COTENANT:-0}" -gt 0 ]; then
    python3 bench/calibration.py --remote "$KCORAL_REMOTE" --task $pinned -n "$AA_COTENANT" --cotenant \
      --json "$out/aa-pinned-cotenant.json" | tail -22
  fi
  ev pinned-twice $pinned $cands/fla_twice pass
fi
if has k; then  # issue 29, step 2: where the host's interrupts go (/proc/stat per core), NVML in a container's
  # stead, the slot's A/A calibration (kcoral calibrate: CAL_N requests, 0 for none, 50 the most a slot's floor
  # rests on), then AA_N A/A requests with the slot's noise floor folded in (AA_COTENANT more beside a busy co-tenant), then the storm as a GPU
  # candidate (STORM=1), the work-twice one (TWICE=1) and the peers' methods (PEERS=N pairs)
  grep '^cpu' /proc/stat > "$out/proc-stat-$(date +%s).txt"
  python3 -m pytest -q -p no:cacheprovider -o addopts='' -m gpu tests/gpu/test_gpuclock.py tests/gpu/test_graph_capture.py -s 2>&1 | tail -6
  left=${CAL_N:-5}; part=0  # one `kcoral calibrate` asks at most 20 (MAX_CALIBRATION_REQUESTS): more in parts
  while [ "$left" -gt 0 ]; do
    n=$(( left < 20 ? left : 20 )); left=$(( left - n )); part=$(( part + 1 ))
    # CAL_APART=S: each request asked for S seconds after the one before ended (a floor over more than one
    # window of the host's time: docs/eval.md)
    kc calibrate $pinned --requests "$n" ${CAL_APART:+--apart "$CAL_APART"} --json > "$out/calibrate-$part.json"
    echo "calibrate ($n): exit $?"
    cp "$out/calibrate-$part.json" "$out/calibrate.json"  # the last part's floor rests on every part's requests
  done
  if [ "$part" -gt 0 ]; then head -c 2500 "$out/calibrate.json"; echo; fi
  python3 bench/calibration.py --remote "$KCORAL_REMOTE" --task $pinned -n "${AA_N:-8}" --json "$out/aa-k-$(date +%s).json" | tail -32
  if [ "${AA_COTENANT:-0}" -gt 0 ]; then  # beside a co-tenant job that keeps its CPU slot's cores busy
    python3 bench/calibration.py --remote "$KCORAL_REMOTE" --task $pinned -n "$AA_COTENANT" --cotenant \
      --json "$out/aa-k-cotenant.json" | tail -22
  fi
  judge=$(ls -t /tmp/kc/jobs/*/eval/judge.log | head -n 1); cp "$judge" "$out/judge-last.log"
  grep -h "per core\|GPU slowed\|samples (\|batches of\|others' work" "$judge" | cut -c1-400
  if [ "${STORM:-0}" = 1 ]; then
    storm=$(mktemp -d)
    cp $attacks/irq_storm/solution.py tests/attacks/candidates/irq_storm/storm.py "$storm/"
    cp tasks/kda/forward_b1_t8192_h96/template.py "$storm/template.py"
    ev attack-irq-storm $pinned "$storm" no-gain
  fi
  if [ "${TWICE:-0}" = 1 ]; then ev pinned-twice $pinned $cands/fla_twice pass; fi
  if [ "${PEERS:-0}" -gt 0 ]; then  # the peers' timing methods, A/A on the bare GPU (PEERS pairs)
    PYTHONPATH=/opt/kcoral-site:${PYTHONPATH:-} python3 bench/peer_methods.py --task $pinned --pairs "$PEERS" \
      --json "$out/peers.json" 2>&1 | grep -v "^pair " | tail -8
  fi
  grep '^cpu' /proc/stat > "$out/proc-stat-$(date +%s).txt"
fi
if has v; then  # issue 29: whose placement the per-request draw follows, on the bare GPU (no kcoral in the way)
  for v in ${VARY:-buffers scratch}; do
    # shellcheck disable=SC2086  # VARY_ARGS: several arguments
    PYTHONPATH=/opt/kcoral-site:${PYTHONPATH:-} python3 bench/variance_source.py --vary "$v" \
      ${VARY_ARGS:---pairs 4 --instances 4 --rounds 30} --json "$out/vary-$v.json" > "$out/vary-$v.log" 2>&1
    echo "variance_source --vary $v: exit $?"; tail -n 14 "$out/vary-$v.log"
  done
fi
if has q; then  # issue 32: a side stream in KernelBench's and GPU MODE's own forms (each must gain nothing)
  ev pack-side-stream-kb kernelbench/level1/1_Square_matrix_multiplication $attacks/pack_side_stream_kb no-gain
  ev pack-side-stream-gm gpumode/pmpp_h200/vectoradd_py $attacks/pack_side_stream_gm no-gain
fi
if has e; then  # issue 29: answers before the work is done, one call at a time and in the trusted batch mode
  ev attack-early-answer $small $attacks/early_answer no-gain
  early=$(mktemp -d)
  cp $attacks/early_answer_batch/solution.py tasks/kda/forward_b1_t8192_h96/template.py "$early/"
  ev attack-early-answer-batch $pinned "$early" no-gain
  grep -h "ANSWERING-EARLY" /tmp/kc/jobs/*/log* 2>/dev/null | sort | uniq -c | head -3
fi
if has s; then  # the spread: the template on the pinned task five times, then the work-twice candidate
  for i in 1 2 3 4 5; do ev pinned-fla-s$i $pinned $template pass; done
  ev pinned-twice $pinned $cands/fla_twice pass
fi
nvidia-smi --query-compute-apps=pid,used_memory --format=csv
kc gpus --json | python3 -c 'import json,sys; print("drained:", json.load(sys.stdin)["leases"]["drained"])'
