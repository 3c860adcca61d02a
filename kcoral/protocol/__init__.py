"""What the client and the server both speak, and nothing of either: the API's documents
(:mod:`~kcoral.protocol.models`; evaluations as candidates, :mod:`~kcoral.protocol.evaluations`), a
submission's digest (:mod:`~kcoral.protocol.submission`), how a log travels
(:mod:`~kcoral.protocol.framing`), job ids (:mod:`~kcoral.protocol.jobids`), what a job sees of its
environment and the names a client may set (:mod:`~kcoral.protocol.jobenv`), the printable rule for
text a job chose (:mod:`~kcoral.protocol.printable`), output paths (:mod:`~kcoral.protocol.relpath`),
the transfer spool (:mod:`~kcoral.protocol.spool`) and signed receipts, checked by anyone
(:mod:`~kcoral.protocol.receipts`). Stdlib only, and ``cryptography`` in receipts; no
module here imports kcoral.runner, kcoral.cli or kcoral.tasks (tests/test_protocol_boundary.py checks it).
"""
