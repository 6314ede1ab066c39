"""Secrets at rest: AES-256-GCM under a key derived from the server secret.

Each value is bound to its owner (the row's id as associated data), so a ciphertext copied onto
another row does not decrypt. The first byte is a format version, leaving room for key rotation.
"""

from __future__ import annotations

import json
import os

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

_VERSION = b"\x01"


class SecretBox:
    def __init__(self, secret_key: bytes, purpose: str) -> None:
        key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=purpose.encode()).derive(
            secret_key
        )
        self._aead = AESGCM(key)

    def seal(self, plaintext: bytes, *, owner: str) -> bytes:
        nonce = os.urandom(12)
        return _VERSION + nonce + self._aead.encrypt(nonce, plaintext, owner.encode())

    def open(self, sealed: bytes, *, owner: str) -> bytes:
        if sealed[:1] != _VERSION:
            raise ValueError("unknown sealed-value format")
        return self._aead.decrypt(sealed[1:13], sealed[13:], owner.encode())

    def seal_json(self, value: object, *, owner: str) -> bytes:
        return self.seal(json.dumps(value, separators=(",", ":")).encode(), owner=owner)

    def open_json(self, sealed: bytes | None, *, owner: str) -> object:
        return None if sealed is None else json.loads(self.open(sealed, owner=owner))
