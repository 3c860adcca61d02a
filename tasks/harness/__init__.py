"""In-container evaluation code, mounted read-only at /kcoral/tasks in evaluation containers.

Two programs share these modules and never run in one process:
- ``python -m tasks.harness.candidate``: in the candidate's container, as uid 65534, next to the
  submission. Generates each case's inputs from its recipe, runs the candidate (and, for timed
  cases, the baseline, interleaved), writes outputs and timing *claims*.
- ``python -m tasks.harness.judge``: in judge containers that never hold candidate code.
  ``prepare`` computes the expected outputs (reference, fp64 oracle) and a trusted baseline time;
  ``check`` compares the candidate's outputs with them.
"""
