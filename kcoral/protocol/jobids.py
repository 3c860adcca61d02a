"""Job ids: the server makes them (:func:`new_job_id`), both sides recognise them (:data:`JOB_ID`)."""

from __future__ import annotations

import re
import secrets
import time

#: a job id: when it was made (UTC date and time to the second) and 8 random hex digits
JOB_ID = re.compile(r"[0-9]{8}-[0-9]{6}-[0-9a-f]{8}")


def new_job_id() -> str:
    """A fresh job id."""
    return time.strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(4)
