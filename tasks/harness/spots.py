"""What the supervisor reads of a CPU call's outputs the moment its worker answers, to hold against the
copy it takes after (:class:`Spots`; tasks.harness.timedcall makes the calls)."""

from __future__ import annotations

import os

import torch

#: elements of each CPU output read the moment a call answers
SPOTS = 256


class Spots:
    """Elements of a call's CPU outputs, at places drawn for each call, read the moment its worker answers
    and held against the outputs once they are copied: an element written after the answer differs.

    The copy itself follows the answer, in the outputs' order: a callable that answered "ok" itself, with
    its last rows left to a thread that stayed ahead of that copy, had those rows off the clock and
    passed every check (a red-team pass: 1.039x). With 7% of the rows left, 256 places all miss them
    once in ~10^8 calls. A CUDA side needs none: the supervisor's copy runs only once the GPU turns to
    this process's work, after the candidate's queued work or within its time slice (what runs on
    after that: tasks.harness.timedcall.Calling._gpu_ran_on)."""

    #: places drawn in this process, which no candidate can read
    _draw = torch.Generator().manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)

    def __init__(self, outputs: dict[str, torch.Tensor]) -> None:
        self.places: dict[str, torch.Tensor] = {}
        self.seen: dict[str, torch.Tensor] = {}
        for name, out in outputs.items():
            n = out.numel()
            if out.device.type == "cpu" and n:
                self.places[name] = torch.randint(n, (min(SPOTS, n),), generator=self._draw)
                self.seen[name] = torch.empty(len(self.places[name]), dtype=out.dtype)

    def read(self, outputs: dict[str, torch.Tensor]) -> None:
        """At the answer, inside the clock: one gather per output."""
        for name, places in self.places.items():
            torch.index_select(outputs[name].view(-1), 0, places, out=self.seen[name])

    def changed(self, snapshot: dict[str, torch.Tensor]) -> str | None:
        """Why the copied outputs differ from what was read at the answer (bit for bit: a NaN written as
        a NaN is no change), or None."""
        for name, places in self.places.items():
            now = snapshot[name].view(-1).index_select(0, places)
            differs = (now.view(torch.uint8) != self.seen[name].view(torch.uint8)).view(len(places), -1).any(1)
            if bool(differs.any()):
                first = int(differs.nonzero()[0])
                at = int(places[first])
                return (
                    f"{name} changed after the call answered (element {at} of its flattened form read "
                    f"{self.seen[name][first].item()!r} at the answer and "
                    f"{snapshot[name].view(-1)[at].item()!r} once copied): the call must finish writing "
                    "its outputs before it returns"
                )
        return None
