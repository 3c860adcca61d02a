"""In-container evaluation code, mounted read-only at /kcoral/tasks in evaluation containers.

Two programs, in two containers under two uids, talking over one socket (tasks.harness.channel):
- ``python -m kcoral.tasks.harness.supervise`` (tasks.harness.supervisor): the trusted side (uid 65533,
  no candidate code). Owns the cases and the secret sample key, every buffer, the reference, the
  baseline worker and the clock; checks every call's outputs and writes the only document the
  server reads.
- ``python -m kcoral.tasks.harness.worker``: the candidate's side (uid 65534, next to the submission).
  Maps the buffers it is handed, builds the submission's callable and calls it when told.
"""
