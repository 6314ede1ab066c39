"""Webhook signatures: GitHub signs each delivery's body with the app's webhook secret and sends
`X-Hub-Signature-256: sha256=<hex HMAC-SHA256>`. Checked in constant time; a missing secret or
header never verifies."""

from __future__ import annotations

import hashlib
import hmac

SIGNATURE_HEADER = "X-Hub-Signature-256"
_PREFIX = "sha256="


def _key(secret: str | bytes) -> bytes:
    return secret.encode() if isinstance(secret, str) else secret


def signature_header(secret: str | bytes, body: bytes) -> str:
    """The `X-Hub-Signature-256` value for `body` (what the git host sends)."""
    if not secret:
        raise ValueError("a webhook secret is required to sign a delivery")
    return _PREFIX + hmac.new(_key(secret), body, hashlib.sha256).hexdigest()


def verify_signature(secret: str | bytes, body: bytes, header: str | None) -> bool:
    """Whether `header` is the signature of exactly `body` under `secret`."""
    if not secret or not header or not header.startswith(_PREFIX):
        return False
    expected = signature_header(secret, body).encode()
    try:
        given = header.encode("ascii")
    except UnicodeEncodeError:
        return False
    return hmac.compare_digest(expected, given)
