"""The pack inspector's children (tasks.packs.inspect) import next to nothing: what every problem needs
(torch's meta-device kernels and the sympy they pull in, ~800 modules on the first meta-device op) is
imported once by the parent before it forks. When each child imported them for itself, 37 problems took
176 s to inspect on the GPU host (~6 s each). Needs torch (CPU is enough); skipped when torch is missing
(tests/tasks/test_torch_tests_in_image.py runs it in the job image)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

from kcoral.tasks.packs import inspect as inspector  # noqa: E402

PACKS = Path(__file__).resolve().parents[1] / "fixtures" / "packs"
#: two of the fixtures' problems, each with the parts of its manifest the inspector reads (the server's
#: registry, which writes them, needs YAML, which the job image lacks)
PROBLEMS = {
    "kernelbench": (
        PACKS / "kernelbench" / "level2",
        {"pack": {"format": "kernelbench", "entry": "1_Linear_Tanh.py"}, "workloads": [{"params": {}}]},
    ),
    "gpumode": (
        PACKS / "gpumode" / "cpu_pack" / "vecadd_py",
        {"pack": {"format": "gpumode", "entry": "reference.py"}, "workloads": [{"params": {"size": 127, "seed": 11}}]},
    ),
}
#: what a problem alone may import (these import nothing new): nothing near the hundreds torch defers
MOST_IMPORTS = 20


@pytest.mark.parametrize("problem", sorted(PROBLEMS))
def test_a_child_imports_only_its_problem_after_the_warm_up(problem: str) -> None:
    root, manifest = PROBLEMS[problem]
    inspector.warm()
    answer = inspector.inspect_one(root, manifest, 60)
    assert "error" not in answer, answer
    assert {s["built_on"] for s in answer["shapes"]} == {"meta"}
    assert answer["imports"] <= MOST_IMPORTS, answer["imports"]
