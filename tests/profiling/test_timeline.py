from __future__ import annotations

from pathlib import Path

import pytest

from kcoral.profiling.iket_load import load

pytest.importorskip("matplotlib")


def test_plot_writes_a_png(trace_path: Path, tmp_path: Path) -> None:
    from kcoral.profiling.timeline import plot

    out = plot(load(trace_path), tmp_path / "sub" / "timeline.png")
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    out2 = plot(trace_path, tmp_path / "graph.png", kernel="other")
    assert out2.stat().st_size > 1000
    with pytest.raises(ValueError, match="no launch"):
        plot(trace_path, tmp_path / "x.png", kernel="missing")
