"""Building an evaluation's cases on the server: workloads, then holdout probes from the secret.

Seeds: check inputs of the standard and stress workloads come from a hash of the workload id
(the same every request, so results compare across requests); holdout probes draw their regimes
and seeds from HMAC(server key, nonce || label); every timed sample's inputs (and the decoy inputs
a worker sets up on) come from the per-request ``sample_key``, which only the supervisor holds.
None of them can be known before the request, and the candidate never sees this document.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import random
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from kcoral.protocol.typeddata import DataError, from_data
from kcoral.tasks.harness.schema import Case, CaseFile, Phase, TimingMethod
from kcoral.tasks.harness.taskdef import Task


def holdout_key(data_dir: Path) -> bytes:
    """The server's holdout key (created once, 0600, never mounted into any container)."""
    path = data_dir / "holdout.key"
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(os.urandom(32))
    return path.read_bytes()


def _seed(material: bytes) -> int:
    return int.from_bytes(hashlib.sha256(material).digest()[:8], "little") >> 1


def timing_method(defaults: TimingMethod, manifest: dict[str, Any]) -> TimingMethod:
    """The server's timing method with the task manifest's ``timing`` over it; ValueError for a key
    the method does not have (a typo in a manifest must not fall back to the default silently)."""
    override = manifest.get("timing", {})
    unknown = sorted(set(override) - {f.name for f in fields(TimingMethod)})
    if unknown:
        raise ValueError(f"task {manifest.get('id', '?')}: unknown timing settings {unknown}")
    try:
        method = from_data(TimingMethod, {**asdict(defaults), **override})
    except DataError as exc:
        raise ValueError(f"task {manifest.get('id', '?')}: timing {exc}") from None
    if method.graph and (method.batch < 2 or manifest.get("device") != "cuda"):
        raise ValueError(
            f"task {manifest.get('id', '?')}: timing graph needs a CUDA task timed in batches (batch 2 or more)"
        )
    return method


def build_cases(task: Task, module: Any, key: bytes, nonce: bytes, timing: TimingMethod) -> CaseFile:
    """The judge's case file: holdout probes first, then the workloads, with opaque ids, and the
    timing method (``timing`` with the manifest's settings over it)."""
    manifest = task.manifest
    default_tol = manifest["tolerance"]
    drafts: list[tuple[Phase, str, dict[str, Any], int, bool, dict[str, float]]] = []
    count = manifest.get("holdout", {}).get("count", 0)
    if count:
        digest = hmac.new(key, nonce + b"holdout/" + task.id.encode(), hashlib.sha256).digest()
        for i, params in enumerate(module.holdout_params(random.Random(digest), count)):
            seed = _seed(hmac.new(key, nonce + f"holdout/{task.id}/{i}".encode(), hashlib.sha256).digest())
            drafts.append((Phase.HOLDOUT, f"holdout{i}", params, seed, False, default_tol))
    for w in manifest["workloads"]:
        seed = _seed(f"{task.id}/{w['id']}".encode())
        drafts.append(
            (Phase.WORKLOAD, w["id"], w["params"], seed, bool(w.get("timed")), w.get("tolerance", default_tol))
        )
    cases = [Case(f"c{i:02d}", *draft) for i, draft in enumerate(drafts)]
    sample_key = hmac.new(key, nonce + b"samples/" + task.id.encode(), hashlib.sha256).hexdigest()
    return CaseFile(
        task=task.id, device=task.device, cases=cases, sample_key=sample_key, timing=timing_method(timing, manifest)
    )


def seed_hashes(doc: CaseFile) -> dict[str, str]:
    """What a receipt keeps of the seeds: their hashes, not the seeds."""
    return {c.id: hashlib.sha256(str(c.seed).encode()).hexdigest()[:16] for c in doc.cases}
