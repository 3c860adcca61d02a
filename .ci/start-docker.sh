#!/usr/bin/env bash
# Make sure a Docker engine answers on this machine (CI without a preinstalled service manager).
# Idempotent: does nothing when `docker info` already works. Otherwise installs Debian's docker.io
# and debootstrap (needed by images/base.py) if missing, starts dockerd in the background
# (log: /tmp/dockerd.log) and waits up to 60 s for it. Needs root.
set -euo pipefail

if docker info >/dev/null 2>&1; then
    echo "docker engine already running: $(docker version --format '{{.Server.Version}}')"
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "start-docker.sh: must run as root to install/start dockerd" >&2
    exit 1
fi

# dockerd lives in /usr/sbin; a docker client may already sit in /usr/local/bin.
export PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:${PATH}"

missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
if [ "${#missing[@]}" -gt 0 ]; then
    echo "installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
if ! command -v docker >/dev/null 2>&1; then
    echo "start-docker.sh: no docker client after installing docker.io" >&2
    exit 1
fi

if ! pgrep -x dockerd >/dev/null 2>&1; then
    echo "starting dockerd (log: /tmp/dockerd.log)"
    setsid dockerd >/tmp/dockerd.log 2>&1 </dev/null &
fi

for _ in $(seq 1 60); do
    if docker info >/dev/null 2>&1; then
        echo "docker engine up: $(docker version --format '{{.Server.Version}}')"
        exit 0
    fi
    sleep 1
done

echo "start-docker.sh: dockerd did not answer within 60 s; last log lines:" >&2
tail -n 30 /tmp/dockerd.log >&2 || true
exit 1
