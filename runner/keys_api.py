"""GET /v1/keys: the public keys this server signs evaluations' receipts with (runner.receipt_keys), to
anyone: a receipt is for others to check (``kcoral verify --remote``). Thin, as runner.api's routes."""

from __future__ import annotations

from fastapi import APIRouter, Request

from kcoral.protocol.receipts import ServerKeys
from kcoral.runner.api import errors, services

router = APIRouter(prefix="/v1")


@router.get("/keys", responses=errors())
def keys(request: Request) -> ServerKeys:
    """The server's id in its receipts and every public key it has signed them with (Ed25519, the raw
    32 bytes in base64), the current one first: a rotated key stays listed, so its receipts still
    verify. No token needed. A receipt's statement is its JSON less its ``signature`` member, made
    canonical as ``canonical`` says."""
    return services(request).keys.public()
