#!/bin/bash
# Sourced by scripts/test.sh and scripts/test-nightly.sh: the web page's tests drive a real browser,
# Debian's chromium and its driver (installed once).
if ! command -v chromium > /dev/null || ! command -v chromedriver > /dev/null; then
  apt-get update -q > /dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium chromium-driver fonts-dejavu-core > /dev/null
fi
