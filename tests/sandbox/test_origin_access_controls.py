"""Two calls that make an origin access control of the same name at once: CloudFront makes one
and refuses the other (`OriginAccessControlAlreadyExists`); the sandbox answers each call on a
thread of its own, and checked the name and made the control in two steps another call could
come between — two controls of one name, where Capstan's sites share exactly one."""

from __future__ import annotations

import pytest
from moto.cloudfront import models
from moto.cloudfront.models import cloudfront_backends

from tests.sandbox.between import second_between

ACCOUNT = "000000000418"  # an account of this test's own
CONFIG = {"Name": "capstan-sites", "SigningProtocol": "sigv4", "SigningBehavior": "always"}


@pytest.mark.usefixtures("endpoint")  # the sandbox, so its extensions are installed
def test_two_controls_of_one_name_made_at_once_are_one(monkeypatch: pytest.MonkeyPatch) -> None:
    backend = cloudfront_backends[ACCOUNT]["aws"]
    try:
        refused = second_between(
            monkeypatch,
            (models.OriginAccessControl, "__init__"),
            lambda: backend.create_origin_access_control(dict(CONFIG)),
            lambda: backend.create_origin_access_control(dict(CONFIG)),
            Exception,  # the refusal, as CloudFront answers it
        )
        names = [control.name for control in backend.origin_access_controls.values()]
        assert names == ["capstan-sites"]
        assert len(refused) == 1 and "already exists" in str(refused[0]), refused
    finally:
        backend.origin_access_controls.clear()
