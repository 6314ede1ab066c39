"""Two calls that make an origin access control of the same name at once: CloudFront makes one
and refuses the other (`OriginAccessControlAlreadyExists`); the sandbox answers each call on a
thread of its own, and checked the name and made the control in two steps another call could
come between — two controls of one name, where Capstan's sites share exactly one."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from moto.cloudfront import models
from moto.cloudfront.models import cloudfront_backends

ACCOUNT = "000000000418"  # an account of this test's own
CONFIG = {"Name": "capstan-sites", "SigningProtocol": "sigv4", "SigningBehavior": "always"}


@pytest.mark.usefixtures("endpoint")  # the sandbox, so its extensions are installed
def test_two_controls_of_one_name_made_at_once_are_one(monkeypatch: pytest.MonkeyPatch) -> None:
    backend = cloudfront_backends[ACCOUNT]["aws"]
    refused: list[Exception] = []

    def second() -> None:
        try:
            backend.create_origin_access_control(dict(CONFIG))
        except Exception as error:  # the refusal, as CloudFront answers it
            refused.append(error)

    made = models.OriginAccessControl.__init__
    other = threading.Thread(target=second)

    def first_being_made(self: Any, config: dict[str, str]) -> None:
        """The first call, between its check of the name and its control being kept: the
        second call comes now (and is given half a second to finish)."""
        if not other.is_alive() and other.ident is None:
            other.start()
            other.join(timeout=0.5)
        made(self, config)

    monkeypatch.setattr(models.OriginAccessControl, "__init__", first_being_made)
    try:
        backend.create_origin_access_control(dict(CONFIG))
        other.join(timeout=10)
        names = [control.name for control in backend.origin_access_controls.values()]
        assert names == ["capstan-sites"]
        assert len(refused) == 1 and "already exists" in str(refused[0]), refused
    finally:
        backend.origin_access_controls.clear()
