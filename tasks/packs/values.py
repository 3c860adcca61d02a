"""A problem's values as kcoral's data dict holds them, and back.

A problem's inputs (KernelBench's list, GPU MODE's data: a tensor, or tuples, lists and dicts of
tensors and numbers) become ``in0``, ``in1``, ... (tensors: the supervisor's buffers) and scalars,
with ``tree``: a JSON description of the structure, which rebuilds the problem's own value around
whatever tensors the data dict holds (a worker's mapped buffers). Outputs go the same way to
``out0``, ``out1``, ... . :func:`write_outputs` is how a worker hands a result over: copied into
the supervisor's buffers, refused with its reason when it is not what the reference returns.
Torch is imported inside the functions (the server reads this module without it).
"""

from __future__ import annotations

from typing import Any

#: the data dict's scalar that holds the inputs' structure
TREE = "tree"
#: a problem's value nested deeper than this is refused
MAX_DEPTH = 8


def flatten(value: Any, prefix: str) -> tuple[Any, dict[str, Any]]:
    """(tree, leaves): ``leaves`` maps ``prefix0``, ``prefix1``, ... to each tensor, in order; the tree
    holds everything else (numbers, strings, None) as constants. No reference cycle is left behind: a
    drawn sample's tensors are freed as soon as the caller drops them (a recursive closure here kept
    each draw alive until the garbage collector's next pass, and on an H100 a GPU MODE problem's
    batches of 8 piled up 59.6 GiB of them in the supervisor)."""
    import torch  # noqa: PLC0415

    leaves: dict[str, Any] = {}
    return _walk(value, 0, prefix, leaves, torch.Tensor), leaves


def _walk(v: Any, depth: int, prefix: str, leaves: dict[str, Any], tensor: type) -> Any:
    """:func:`flatten`'s tree of ``v`` (its tensors into ``leaves``)."""
    if depth > MAX_DEPTH:
        raise ValueError(f"a value nested deeper than {MAX_DEPTH}")
    if isinstance(v, tensor):
        name = f"{prefix}{len(leaves)}"
        leaves[name] = v
        return ["tensor", name]
    if isinstance(v, tuple | list):
        return ["tuple" if isinstance(v, tuple) else "list", [_walk(x, depth + 1, prefix, leaves, tensor) for x in v]]
    if isinstance(v, dict):
        if not all(isinstance(k, str) for k in v):
            raise ValueError("a dict with keys that are not strings")
        return ["dict", {k: _walk(x, depth + 1, prefix, leaves, tensor) for k, x in v.items()}]
    if v is None or isinstance(v, bool | int | float | str):
        return ["const", v]
    raise ValueError(f"a value of type {type(v).__name__} (tensors, numbers, strings, tuples, lists, dicts only)")


def unflatten(tree: Any, leaves: dict[str, Any]) -> Any:
    """The value ``tree`` describes, with its tensors taken from ``leaves`` by name."""
    kind, body = tree
    if kind == "tensor":
        return leaves[body]
    if kind == "tuple":
        return tuple(unflatten(t, leaves) for t in body)
    if kind == "list":
        return [unflatten(t, leaves) for t in body]
    if kind == "dict":
        return {k: unflatten(t, leaves) for k, t in body.items()}
    return body


def as_outputs(result: Any) -> dict[str, Any]:
    """A reference's result as ``out0``, ``out1``, ...: a tensor, a number (a 0-d tensor), or a
    tuple or list of them."""
    import torch  # noqa: PLC0415

    items = list(result) if isinstance(result, tuple | list) else [result]
    outs = {}
    for i, item in enumerate(items):
        if isinstance(item, bool | int | float):
            item = torch.tensor(item)
        if not isinstance(item, torch.Tensor):
            raise ValueError(f"output {i} is a {type(item).__name__}, not a tensor or a number")
        outs[f"out{i}"] = item.detach()
    return outs


def write_outputs(result: Any, buffers: dict[str, Any]) -> None:
    """Copy a call's ``result`` into the output ``buffers`` (``out0``, ...), or raise with the reason it
    does not fit: another count, type, shape, dtype or device. A tensor subclass (a lazy value) is
    not a tensor here."""
    import torch  # noqa: PLC0415

    items = list(result) if isinstance(result, tuple | list) else [result]
    if len(items) != len(buffers):
        raise ValueError(f"returned {len(items)} output(s), the reference returns {len(buffers)}")
    for i, item in enumerate(items):
        out = buffers[f"out{i}"]
        if isinstance(item, bool | int | float) and out.dim() == 0:
            out.fill_(item)
            continue
        if type(item) is not torch.Tensor and type(item) is not torch.nn.Parameter:
            raise TypeError(f"output {i} is a {type(item).__module__}.{type(item).__qualname__}, not a torch.Tensor")
        if tuple(item.shape) != tuple(out.shape) or item.dtype != out.dtype or item.device.type != out.device.type:
            raise ValueError(
                f"output {i} is {item.dtype} {list(item.shape)} on {item.device.type}; "
                f"the reference's is {out.dtype} {list(out.shape)} on {out.device.type}"
            )
        if _shares_storage(item, buffers):
            raise ValueError(
                f"output {i} is held in the judge's own output buffer, reached from the worker: a call returns "
                "a tensor of its own (the worker copies it, as it copies the reference's)"
            )
        out.copy_(item)


def _shares_storage(item: Any, buffers: dict[str, Any]) -> bool:
    """Whether ``item``'s memory is one of the output ``buffers``' (itself or a view of it): a copy onto
    itself, which torch skips, would spare the call the copy every other call pays."""
    try:
        at = item.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):  # no storage of its own (sparse, meta): copy_ says why
        return False
    return at != 0 and any(at == b.untyped_storage().data_ptr() for b in buffers.values())  # 0: no memory


def specs(tensors: dict[str, Any]) -> dict[str, tuple[tuple[int, ...], str]]:
    """Each tensor's (shape, dtype name)."""
    return {name: (tuple(t.shape), str(t.dtype).removeprefix("torch.")) for name, t in tensors.items()}
