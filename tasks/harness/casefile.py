"""The case file handed to the candidate harness: one uniform recipe per case, whatever its phase.

Public form (candidate reads it): {"task", "device", "timing", "cases": [{"id", "seed", "params",
"timed", "samples"}]}. Case ids are opaque (c00, c01, ...); which case is a holdout probe is only
in the judge's copy, which adds "phase", "workload" and "tolerance" to each case.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PUBLIC_KEYS = ("id", "seed", "params", "timed", "samples")


def public_view(full: dict[str, Any]) -> dict[str, Any]:
    return {**{k: v for k, v in full.items() if k != "cases"},
            "cases": [{k: c[k] for k in PUBLIC_KEYS if k in c} for c in full["cases"]]}


def write(path: Path, doc: dict[str, Any]) -> None:
    path.write_text(json.dumps(doc, indent=1))


def read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())
