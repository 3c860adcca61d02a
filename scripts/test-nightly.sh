#!/bin/bash
# The tests CI's scripts/test.sh leaves out (marked `nightly`: slow, and what they check changes seldom;
# pyproject's markers), one at a time on a quiet host as the non-concurrent lane runs: the Ray cluster
# (tests/cluster/test_cluster.py), what the web page shows in a real browser, the storming co-tenant
# (tests/integration/test_cotenant_storm.py), a rerun's pinned image and task, the ten first mistakes'
# reasons, history/compare/best, `kcoral calibrate`, rerun's side-by-side view and `kcoral tasks show`/
# `init` end to end, a deadline and a too-slow submission waited out. Run it before a release and after a
# change to what they cover; the 15 slowest are named.
set -euo pipefail
source "$(dirname "$0")/install.sh"
source scripts/install-browser.sh  # install.sh left us at the checkout's root
python3 -m pytest -q -p no:cacheprovider --durations=15 -m "nightly and not gpu" "$@"
