"""kda/forward_b1_t512_h8: the KDA forward task of ``../forward_b1_t8192_h96`` at B=1, T=512, H=8.

Task directories are loaded by file path, so this one loads its sibling's ``task.py`` by path and
re-exports it; only the holdout shape differs (read from this directory's manifest).
"""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path
from typing import Any

_IMPL_PATH = Path(__file__).resolve().parent.parent / "forward_b1_t8192_h96" / "task.py"
_spec = importlib.util.spec_from_file_location("kcoral_task_kda_impl_forward_b1_t8192_h96", _IMPL_PATH)
assert _spec and _spec.loader
_impl = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_impl)

make_inputs = _impl.make_inputs
make_outputs = _impl.make_outputs
output_specs = _impl.output_specs
signature = _impl.signature
reference = _impl.reference
baseline = _impl.baseline
candidate = _impl.candidate
oracle = _impl.oracle
floor_ms = _impl.floor_ms


def holdout_params(rng: random.Random, count: int) -> list[dict[str, Any]]:
    return _impl.draw_holdout(rng, count, _impl.standard_shape(Path(__file__).with_name("manifest.json")))
