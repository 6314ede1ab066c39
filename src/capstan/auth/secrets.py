"""Secrets Capstan hands out or checks: passwords, API token secrets, session secrets, CSRF tokens.

Passwords are argon2id hashes. Token and session secrets are random, and only their SHA-256 is
stored, so a leaked database yields nothing that signs in. API token secrets have a fixed prefix
(so secret scanners can find them) and a CRC32 checksum (so a typo is told apart from a revoked
token without a database read).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
import zlib

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

API_TOKEN_PREFIX = "capstan_"  # noqa: S105 (a public prefix, not a secret)
_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_hasher = PasswordHasher()
# Verified when no user has the given email, so an unknown email costs as much as a wrong password.
# Made at the first such check, not on import: a hash is ~170 ms of CPU that every process paid
# at start (`capstan migrate`, `admin`, each worker), most of them never checking a password.
_dummy_hash: str | None = None


def _dummy() -> str:
    global _dummy_hash
    if _dummy_hash is None:
        _dummy_hash = _hasher.hash(secrets.token_urlsafe(16))
    return _dummy_hash


def use_hash_cost(*, time_cost: int, memory_cost_kib: int, parallelism: int) -> None:
    """Hash new passwords (and check unknown emails) at this argon2id cost from now on; a stored
    hash is always checked at the cost it was made with. The default is argon2-cffi's (RFC 9106's
    second recommendation: 64 MiB, 3 passes) — about 170 ms of CPU per hash here. The test suite
    lowers it: it hashes and checks a few thousand passwords that protect nothing."""
    global _hasher, _dummy_hash
    _hasher = PasswordHasher(
        time_cost=time_cost, memory_cost=memory_cost_kib, parallelism=parallelism
    )
    _dummy_hash = None  # made again at this cost


MIN_PASSWORD_LENGTH = 12
_COMMON_PASSWORDS = frozenset(
    {
        "password1234",
        "123456789012",
        "qwertyuiopas",
        "passwordpassword",
        "letmeinletmein",
        "administrator",
        "changemechangeme",
        "capstancapstan",
    }
)


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(password_hash: str | None, password: str) -> bool:
    try:
        return _hasher.verify(password_hash or _dummy(), password) and password_hash is not None
    except (VerificationError, InvalidHashError):
        return False


def password_problem(password: str, *, email: str = "") -> str | None:
    """Why a password is too weak, or None when it will do."""
    if len(password) < MIN_PASSWORD_LENGTH:
        return f"Passwords need at least {MIN_PASSWORD_LENGTH} characters."
    if len(set(password)) < 5:
        return "Passwords need more than a few distinct characters."
    if password.lower() in _COMMON_PASSWORDS or (email and email.split("@")[0] in password.lower()):
        return "That password is too easy to guess."
    return None


def sha256_hex(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def _base62(number: int, width: int) -> str:
    chars = []
    for _ in range(width):
        number, digit = divmod(number, 62)
        chars.append(_BASE62[digit])
    return "".join(reversed(chars))


def new_api_token_secret() -> str:
    """`capstan_` + 256 random bits in base62 (43 chars) + a 6-char CRC32 checksum."""
    body = _base62(int.from_bytes(secrets.token_bytes(32), "big"), 43)
    return f"{API_TOKEN_PREFIX}{body}{_base62(zlib.crc32(body.encode()), 6)}"


def api_token_well_formed(secret: str) -> bool:
    if not secret.startswith(API_TOKEN_PREFIX) or len(secret) != len(API_TOKEN_PREFIX) + 49:
        return False
    body, checksum = secret[len(API_TOKEN_PREFIX) : -6], secret[-6:]
    return hmac.compare_digest(_base62(zlib.crc32(body.encode()), 6), checksum)


def new_session_secret() -> str:
    return secrets.token_urlsafe(32)


def csrf_token(key: bytes, session_id: str, *, now: float | None = None) -> str:
    issued = int(now if now is not None else time.time())
    return f"{issued}.{_csrf_mac(key, session_id, issued)}"


def csrf_token_valid(
    key: bytes, session_id: str, token: str, *, max_age_seconds: int, now: float | None = None
) -> bool:
    issued_text, _, mac = token.partition(".")
    if not issued_text.isdigit() or not mac:
        return False
    issued = int(issued_text)
    if not 0 <= (now if now is not None else time.time()) - issued <= max_age_seconds:
        return False
    return hmac.compare_digest(_csrf_mac(key, session_id, issued), mac)


def _csrf_mac(key: bytes, session_id: str, issued: int) -> str:
    digest = hmac.new(key, f"csrf|{session_id}|{issued}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
