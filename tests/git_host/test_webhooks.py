from __future__ import annotations

import pytest

from capstan.git_host.webhooks import signature_header, verify_signature

# The example from GitHub's "Validating webhook deliveries" documentation.
SECRET = "It's a Secret to Everybody"
BODY = b"Hello, World!"
SIGNATURE = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"


def test_githubs_documented_example() -> None:
    assert signature_header(SECRET, BODY) == SIGNATURE
    assert verify_signature(SECRET, BODY, SIGNATURE)
    assert verify_signature(SECRET.encode(), BODY, SIGNATURE)


@pytest.mark.parametrize(
    ("secret", "body", "header"),
    [
        (SECRET, b"Hello, World?", SIGNATURE),  # body changed
        ("another secret", BODY, SIGNATURE),  # wrong secret
        (SECRET, BODY, SIGNATURE.removeprefix("sha256=")),  # no scheme
        (SECRET, BODY, SIGNATURE.replace("sha256=", "sha1=")),  # other scheme
        (SECRET, BODY, SIGNATURE.upper()),
        (SECRET, BODY, SIGNATURE[:-1]),  # truncated
        (SECRET, BODY, SIGNATURE + "0"),
        (SECRET, BODY, "sha256=ü" + SIGNATURE[8:]),  # not ASCII
        (SECRET, BODY, ""),
        (SECRET, BODY, None),
        ("", BODY, signature_header("x", BODY).replace("x", "")),  # no secret never verifies
    ],
)
def test_anything_else_fails(secret: str, body: bytes, header: str | None) -> None:
    assert not verify_signature(secret, body, header)


def test_empty_secret_cannot_sign() -> None:
    with pytest.raises(ValueError):
        signature_header("", BODY)
