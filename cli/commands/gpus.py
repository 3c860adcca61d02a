"""``kcoral gpus``: the server's health: docker, GPUs, slots, images, drained GPUs."""

from __future__ import annotations

from kcoral.cli.commands.common import JsonOption, RemoteOption, TokenOption, connect
from kcoral.cli.output import emit_json, stdout
from kcoral.cli.render import health_view


def gpus(remote: RemoteOption = None, token: TokenOption = None, json: JsonOption = False) -> None:
    """Show the server's GPUs and health (GET /v1/health)."""
    with connect(remote, token) as client:
        health = client.health()
    if json:
        emit_json(health)
    else:
        stdout().print(health_view(health))
