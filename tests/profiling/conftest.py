from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(params=["trace_plain.json", "trace_interned.json"])
def trace_path(request: pytest.FixtureRequest) -> Path:
    """The same synthetic trace in both JSON shapes."""
    return FIXTURES / request.param
