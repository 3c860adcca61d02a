"""Issue 8, class 4 (work where the clock is not): a background thread watches the input buffer and,
as soon as the supervisor has written new inputs, computes the answer into a private buffer; the
call itself only copies it out. The watching and the early work are CPU time outside this worker's
calls, which the supervisor reads from the kernel's accounting of the whole container: flagged."""

import threading

import torch

_slots = []


def watch():
    while True:
        for x, private, state in list(_slots):
            probe = float(x[0, 0])
            if probe != state["seen"]:
                # the inputs may still be being written: keep the answer only when they held still while
                # it was worked out (the same sum before and after), else look again
                before = float(x.sum())
                torch.softmax(x, dim=-1, out=private)
                if float(x.sum()) == before and float(x[0, 0]) == probe:
                    state["seen"] = probe
                    state["ready"] = probe


threading.Thread(target=watch, daemon=True).start()


def setup(data):
    x, y = data["x"], data["y"]
    private = torch.empty_like(y)
    state = {"seen": None, "ready": None}
    _slots.append((x, private, state))

    def run():
        if state["ready"] == float(x[0, 0]):
            y.copy_(private)
        else:
            torch.softmax(x, dim=-1, out=y)

    return run
