#!/bin/bash
# Phase o of scripts/gpu-host-eval.sh (the CLI with the host's own python3), then the same bench
# against the same server with the CLI run by a virtual environment of its own (no site-packages of
# the host's: what `pip install kcoral` into a fresh environment gives), and its import times.
# Usage: OUT=DIR bash scripts/gpu-host-overhead-venv.sh BUNDLE.tar.xz SERVER_WHEELS JOB_WHEELS
set -u
out=${OUT:-/tmp/kcoral-eval}; mkdir -p "$out"
OUT=$out/eval bash scripts/gpu-host-eval.sh "$1" "$2" "$3" o > "$out/eval-o.log" 2>&1
tail -n 4 "$out/eval-o.log"
python3 -m venv --without-pip /tmp/kcv
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/docker-bundle/bin:$PATH
mounts=""; for d in /usr /lib /lib64 /bin /sbin /opt /etc; do [ -d $d ] && mounts+=" -v $d:$d:ro"; done
devs=""; for d in /dev/nvidia0 /dev/nvidiactl /dev/nvidia-uvm /dev/nvidia-uvm-tools; do [ -e $d ] && devs+=" --device $d"; done
python3 bench/overhead.py --remote http://127.0.0.1:8901 --image kcoral-toolchain:latest --python "$(command -v python3)" \
  --bare-args "--network none$mounts$devs" --runs 10 --clients 2 --jobs-per-client 3 \
  --client-python /tmp/kcv/bin/python3 --json "$out/overhead-venv.json" > "$out/overhead-venv.log" 2>&1
tail -n 6 "$out/overhead-venv.log"
/tmp/kcv/bin/python3 -X importtime -m kcoral python --remote http://127.0.0.1:9 -c pass 2> "$out/cli-importtime-venv.txt"
