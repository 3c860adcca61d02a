"""A task's contract from its manifest and its torch-free signature (tasks.contract)."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from kcoral.protocol.errors import InfrastructureError
from kcoral.runner.limits import Limits
from kcoral.tasks.contract import task_contract
from kcoral.tasks.harness.taskdef import load_task
from kcoral.tasks.registry import DEFAULT_TASKS_DIR, find_task


def contract(task_id: str, limits: Limits | None = None):
    return task_contract(find_task(DEFAULT_TASKS_DIR, task_id), limits or Limits(), "img@sha256:1", "3.11.2", {})


def test_every_workload_of_every_task_has_its_data_named() -> None:
    for task_id in ("demo/softmax", "kda/forward_b1_t8192_h96", "kda/forward_b1_t512_h8"):
        c = contract(task_id)
        manifest = find_task(DEFAULT_TASKS_DIR, task_id).manifest
        assert [w.id for w in c.workloads] == [w["id"] for w in manifest["workloads"]]
        assert all(w.inputs and w.outputs for w in c.workloads) and c.holdout_probes == manifest["holdout"]["count"]
        assert "def setup(" in c.template  # the sibling task shares its family's template


def test_kda_shapes_follow_the_params() -> None:
    standard = contract("kda/forward_b1_t512_h8").workloads[0]
    assert standard.inputs["q"].shape == [1, 512, 8, 128] and standard.inputs["q"].dtype == "bfloat16"
    assert standard.inputs["dt_bias"].shape == [8 * 128] and standard.outputs["final_state"].shape == [1, 8, 128, 128]
    assert standard.scalars["scale"] == pytest.approx(128**-0.5)


def test_the_servers_limit_caps_the_time_limit_and_the_manifest_refines_the_timing() -> None:
    c = contract("demo/softmax", replace(Limits(), max_timeout_s=120))
    assert (
        c.timeout_s == 120
        and c.timing["budget_s"] == 6
        and c.timing["call_timeout_s"] == Limits().eval_timing.call_timeout_s
    )


def copy_task(tmp_path: Path, **manifest: object) -> Path:
    family = tmp_path / "family"
    shutil.copytree(DEFAULT_TASKS_DIR / "demo" / "softmax", family / "softmax")
    path = family / "softmax" / "manifest.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **manifest}))
    return family / "softmax"


@pytest.mark.parametrize("where", ["../../outside.py", "/etc/passwd", "missing.py"])
def test_a_template_outside_the_family_or_missing_is_none(tmp_path: Path, where: str) -> None:
    (tmp_path / "outside.py").write_text("secret")
    root = copy_task(tmp_path, template=where)
    assert task_contract(load_task(root), Limits(), "i", "3", {}).template == ""


def test_a_task_without_a_signature_cannot_give_its_contract(tmp_path: Path) -> None:
    root = copy_task(tmp_path)
    source = (root / "task.py").read_text()
    (root / "task.py").write_text(source.replace("def signature(", "def _no_signature("))
    with pytest.raises(InfrastructureError, match="no signature"):
        task_contract(load_task(root), Limits(), "i", "3", {})


def test_the_pinned_kda_task_says_it_times_graph_replays_of_batches() -> None:
    c = contract("kda/forward_b1_t8192_h96")
    assert c.timing["batch"] == 8 and c.timing["graph"] is True
    assert "timed in the batch mode" in c.timing_method and "captured once in a CUDA graph" in c.timing_method
    assert "CUDA graph" not in contract("kda/forward_b1_t512_h8").timing_method
