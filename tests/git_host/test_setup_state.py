from __future__ import annotations

from datetime import UTC, datetime, timedelta

import jwt
import pytest

from capstan.git_host.setup_state import (
    StateExpired,
    StateInvalid,
    _key,
    binding_of,
    new_binding,
    read_state,
    sign_state,
)

KEY = b"a server secret key of at least thirty-two bytes"


def state(**changes: object) -> str:
    now = datetime.now(UTC)
    values: dict[str, object] = {
        "setup_id": "ghs_1",
        "organization_id": "org_1",
        "binding": binding_of("the browser's cookie"),
        "expires_at": now + timedelta(minutes=5),
        "issued_at": now,
    }
    values.update(changes)
    return sign_state(KEY, **values)  # type: ignore[arg-type]


def test_round_trip() -> None:
    read = read_state(KEY, state())
    assert (read.setup_id, read.organization_id) == ("ghs_1", "org_1")
    assert read.expires_at > datetime.now(UTC)


def test_a_state_is_bound_to_the_cookie_of_the_browser_that_started_it() -> None:
    cookie = new_binding()
    read = read_state(KEY, state(binding=binding_of(cookie)))
    assert read.started_in(cookie)
    assert not read.started_in(new_binding())
    assert not read.started_in(None)
    assert not read.started_in("")
    assert cookie not in state(binding=binding_of(cookie))  # the state carries only its hash


def test_a_state_without_its_binding_is_invalid() -> None:
    """A state signed before states were bound (no `bnd` claim) is not accepted."""
    now = datetime.now(UTC)
    claims = jwt.decode(
        state(), options={"verify_signature": False}, audience="capstan:git_host_setup"
    )
    del claims["bnd"]
    unbound = jwt.encode(claims, _key(KEY), algorithm="HS256")
    assert claims["exp"] > now.timestamp()
    with pytest.raises(StateInvalid):
        read_state(KEY, unbound)


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
