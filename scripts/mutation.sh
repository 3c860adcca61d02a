#!/usr/bin/env bash
# Mutation scores of the verdict code against its unit tests (issue 31 item 7): scripts/mutation.py over
# each module with the unit tests that import it, no Docker. A developer's check, never run by CI
# (minutes: a forked pytest per mutant). Run from the checkout root with the venv of its editable install:
#   PY=/path/to/venv/bin/python scripts/mutation.sh [stats|checks|cpuwatch|report|sandbox|sampling]...
# Each prints "MODULE: N mutants, K killed, S survived: score X%" and the survivors' lines.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-python3}
run() { nice -n 5 "$PY" scripts/mutation.py --list-survivors "$@"; }
for what in "${@:-stats checks cpuwatch report sandbox}"; do
  for one in $what; do
    case $one in
      stats) run kcoral.tasks.harness.stats tests/tasks/test_stats.py tests/tasks/test_stats_cases.py \
        tests/tasks/test_stats_edges.py tests/tasks/test_sampling.py tests/runner/test_comparison.py \
        tests/tasks/test_estimator.py tests/tasks/test_calibration.py ;;
      checks) run kcoral.tasks.harness.checks tests/tasks/test_checks.py ;;  # needs torch (CPU is enough)
      cpuwatch) run kcoral.tasks.harness.cpuwatch tests/tasks/test_cpuwatch.py ;;
      report)  # the report, its printed lines (tasks/report_lines.py) and the batch-gain check
        for module in kcoral.tasks.report kcoral.tasks.report_lines kcoral.tasks.batch_gain; do
          run $module tests/tasks/test_report.py tests/tasks/test_schema_report.py tests/tasks/test_calibration.py
        done ;;
      sandbox) run kcoral.runner.sandbox --only container_options tests/runner/test_sandbox_options.py ;;
      sampling) run kcoral.tasks.harness.sampling tests/tasks/test_sampling.py ;;  # not in the default five
      *) echo "unknown: $one (stats checks cpuwatch report sandbox sampling)" >&2; exit 2 ;;
    esac
  done
done
