"""Proton's tree (``kcoral proton --data tree``: proton.hatchet), read and summarised.

The tree is Hatchet's JSON: a list whose first item is the call tree (``{"frame": {"name"}, "metrics":
{...}, "children": [...]}`` from a ROOT through each kernel to its scopes, nested as the scopes nest) and
whose second holds the devices (``{"CUDA": {"0": {"arch", "clock_rate" (kHz), "num_sms", ...}}}``).
Instrumentation mode's metrics per scope are ``cycles`` (summed over every warp and CTA that recorded
it) and ``normalized_cycles`` (per recording warp: what the scope took). The summary lists, per kernel,
each scope with its path, its normalised and total cycles, and microseconds at the device's clock.

The file is the job's: read capped (profiling.capped), nodes and depth bounded, names shown escaped by
the caller (protocol.printable); a file that is no tree is a :class:`TreeError` (one line, exit 2).
"""

from __future__ import annotations

import math
import os
from typing import Any

from kcoral.profiling.capped import open_regular, parse_json, read_at_most

#: the most bytes of a tree read, nodes walked and scopes deep
MAX_TREE_BYTES = 64 << 20
MAX_NODES = 100_000
MAX_DEPTH = 64


class TreeError(ValueError):
    """The file is not a Proton tree that can be read; the message says why."""


def is_tree(doc: object) -> bool:
    """Whether a parsed JSON document has a Proton (Hatchet) tree's shape."""
    return isinstance(doc, list) and bool(doc) and isinstance(doc[0], dict) and "frame" in doc[0]


def load(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The summary (:func:`summarize`) of the tree at ``path``; TreeError for anything else."""
    source = os.fspath(path)
    try:
        with open_regular(source, TreeError) as f:
            data = read_at_most(f, MAX_TREE_BYTES, source, TreeError, "a Proton tree")
    except OSError as exc:
        raise TreeError(f"{source}: {exc.strerror or exc}") from None
    return summarize(parse_json(data, source, TreeError), source)


def summarize(doc: object, source: str = "") -> dict[str, Any]:
    """``{"kernels": [{"name", "scopes": [{"path", "name", "depth", "normalized_cycles", "cycles", "us"}]}],
    "clock_khz": ...}``: each kernel under the root, each scope under it in the tree's order."""
    where = source or "input"
    if not is_tree(doc):
        raise TreeError(f"{where}: not a Proton tree (a list whose first item has a frame)")
    assert isinstance(doc, list)
    clock_khz = _clock_khz(doc[1] if len(doc) > 1 else None)
    walked = [0]
    kernels = []
    for node in _children(doc[0], where):
        scopes: list[dict[str, Any]] = []
        _scopes(node, [], scopes, walked, where, clock_khz)
        kernels.append({"name": _name(node), "scopes": scopes})
    return {"kernels": kernels, "clock_khz": clock_khz}


def _scopes(
    node: dict[str, Any],
    path: list[str],
    out: list[dict[str, Any]],
    walked: list[int],
    where: str,
    clock_khz: float | None,
) -> None:
    if len(path) >= MAX_DEPTH:
        raise TreeError(f"{where}: scopes nested deeper than {MAX_DEPTH}")
    for child in _children(node, where):
        walked[0] += 1
        if walked[0] > MAX_NODES:
            raise TreeError(f"{where}: more than {MAX_NODES} nodes")
        name = _name(child)
        found = child.get("metrics")
        metrics: dict[str, Any] = found if isinstance(found, dict) else {}
        norm, total = _number(metrics.get("normalized_cycles")), _number(metrics.get("cycles"))
        us = norm / clock_khz * 1e3 if norm is not None and clock_khz else None
        out.append({"path": "/".join([*path, name]), "name": name, "depth": len(path),
                    "normalized_cycles": norm, "cycles": total, "us": us})  # fmt: skip
        _scopes(child, [*path, name], out, walked, where, clock_khz)


def _children(node: object, where: str) -> list[dict[str, Any]]:
    if not isinstance(node, dict):
        raise TreeError(f"{where}: a node is not an object")
    children = node.get("children", [])
    if not isinstance(children, list) or not all(isinstance(c, dict) for c in children):
        raise TreeError(f"{where}: a node's children are not a list of objects")
    return children


def _name(node: dict[str, Any]) -> str:
    frame = node.get("frame")
    name = frame.get("name") if isinstance(frame, dict) else None
    return str(name)[:200] if name is not None else "(unnamed)"


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) and 0 <= number < 1e18 else None


def _clock_khz(devices: object) -> float | None:
    """The first CUDA device's SM clock (kHz) from the tree's device list, where it says."""
    if not isinstance(devices, dict) or not isinstance(devices.get("CUDA"), dict):
        return None
    for device in devices["CUDA"].values():
        if isinstance(device, dict):
            khz = _number(device.get("clock_rate"))
            if khz:
                return khz
    return None


def format_lines(summary: dict[str, Any]) -> list[str]:
    """The summary as text: per kernel, a line per scope (indented as the scopes nest)."""
    clock = summary.get("clock_khz")
    lines = [f"Proton tree; SM clock {clock / 1e3:.0f} MHz" if clock else "Proton tree (the SM clock not recorded)"]
    for kernel in summary["kernels"]:
        lines.append(f"kernel {kernel['name']}: {len(kernel['scopes'])} scopes")
        for scope in kernel["scopes"]:
            norm, total, us = scope["normalized_cycles"], scope["cycles"], scope["us"]
            figures = f"{norm:,.0f} cycles per warp" if norm is not None else "no normalized_cycles"
            if total is not None:
                figures += f" ({total:,.0f} in all)"
            if us is not None:
                figures += f", {us:,.2f} us"
            lines.append(f"  {'  ' * scope['depth']}{scope['name']}: {figures}")
    return lines
