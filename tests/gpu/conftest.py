"""What the GPU tests share: torch with a CUDA context made, or the test skipped where there is no GPU."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(scope="module")
def torch() -> Any:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU here")
    torch.zeros(1, device="cuda")
    return torch
