#!/bin/bash
# Phase o of scripts/gpu-host-eval.sh (the CLI with the host's own python3), then the same bench
# against the same server with the CLI run by a virtual environment of its own (no site-packages of
# the host's: what `pip install kcoral-bench` into a fresh environment gives), and its import times.
# Usage: OUT=DIR bash scripts/gpu-host-overhead-venv.sh BUNDLE.tar.xz SERVER_WHEELS JOB_WHEELS
set -u
out=${OUT:-/tmp/kcoral-eval}; mkdir -p "$out"
OUT=$out/eval bash scripts/gpu-host-eval.sh "$1" "$2" "$3" o > "$out/eval-o.log" 2>&1
tail -n 4 "$out/eval-o.log"
python3 -m venv --without-pip /tmp/kcv
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/docker-bundle/bin:$PATH
# the client's packages that /tmp/site lacks, copied from the host's Python and byte-compiled: what
# `pip install kcoral-bench` into a fresh environment gives (the host has no network to install them)
venv_site=$(/tmp/kcv/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
for pkg in httpx httpcore h11 anyio sniffio certifi idna click typer; do
  PYTHONPATH=/tmp/site /tmp/kcv/bin/python3 -c "import $pkg" 2>/dev/null && continue
  src=$(python3 -c "import $pkg, os; print(os.path.dirname($pkg.__file__))" 2>/dev/null) && cp -r "$src" "$venv_site/"
done
/tmp/kcv/bin/python3 -m compileall -q "$venv_site" /tmp/site "$PWD"/{kcoral,cli,runner,tasks,profiling,images} >/dev/null
mounts=""; for d in /usr /lib /lib64 /bin /sbin /opt /etc; do [ -d $d ] && mounts+=" -v $d:$d:ro"; done
devs=""; for d in /dev/nvidia0 /dev/nvidiactl /dev/nvidia-uvm /dev/nvidia-uvm-tools; do [ -e $d ] && devs+=" --device $d"; done
python3 bench/overhead.py --remote http://127.0.0.1:8901 --image kcoral-toolchain:latest --python "$(command -v python3)" \
  --bare-args "--network none$mounts$devs" --runs 20 --clients 2 --jobs-per-client 3 \
  --client-python /tmp/kcv/bin/python3 --json "$out/overhead-venv.json" > "$out/overhead-venv.log" 2>&1
tail -n 6 "$out/overhead-venv.log"
/tmp/kcv/bin/python3 -X importtime -m kcoral python --remote http://127.0.0.1:9 -c pass 2> "$out/cli-importtime-venv.txt"
