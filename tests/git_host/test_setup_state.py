from __future__ import annotations

from datetime import UTC, datetime, timedelta

import jwt
import pytest

from capstan.git_host.setup_state import StateExpired, StateInvalid, read_state, sign_state

KEY = b"a server secret key of at least thirty-two bytes"


def state(**changes: object) -> str:
    now = datetime.now(UTC)
    values: dict[str, object] = {
        "setup_id": "ghs_1",
        "organization_id": "org_1",
        "expires_at": now + timedelta(minutes=5),
        "issued_at": now,
    }
    values.update(changes)
    return sign_state(KEY, **values)  # type: ignore[arg-type]


def test_round_trip() -> None:
    read = read_state(KEY, state())
    assert (read.setup_id, read.organization_id) == ("ghs_1", "org_1")
    assert read.expires_at > datetime.now(UTC)


def test_expired() -> None:
    past = datetime.now(UTC) - timedelta(seconds=1)
    with pytest.raises(StateExpired):
        read_state(KEY, state(expires_at=past, issued_at=past - timedelta(minutes=5)))


def test_other_key_and_tampering() -> None:
    with pytest.raises(StateInvalid):
        read_state(b"another key", state())
    header, _payload, signature = state().split(".")
    other_payload = state(organization_id="org_2").split(".")[1]
    with pytest.raises(StateInvalid):
        read_state(KEY, f"{header}.{other_payload}.{signature}")


def test_a_token_for_another_purpose_signed_with_the_raw_key() -> None:
    """The state key is derived from the secret key: the raw key signs nothing valid here."""
    now = datetime.now(UTC)
    token = jwt.encode(
        {
            "sub": "ghs_1",
            "org": "org_1",
            "aud": "capstan:git_host_setup",
            "iat": int(now.timestamp()),
            "exp": int((now + timedelta(minutes=5)).timestamp()),
        },
        KEY,
        algorithm="HS256",
    )
    with pytest.raises(StateInvalid):
        read_state(KEY, token)
