"""A role is found (or not) while another call changes the account's roles (`moto_threads`):
moto walked the live dictionary, and a change in the middle of the walk was a bare 500."""

from __future__ import annotations

from typing import Any

import pytest
from moto.iam.exceptions import NotFoundException
from moto.iam.models import iam_backends

from capstan.sandbox.cloud import moto_threads

ACCOUNT = "000000000417"  # an account of this test's own


class _Interloper:
    """A role whose name, when read, makes another role: another thread's `CreateRole` landing
    in the middle of a walk over the roles."""

    arn = f"arn:aws:iam::{ACCOUNT}:role/interloper"

    def __init__(self, roles: dict[str, Any]) -> None:
        self._roles = roles

    @property
    def name(self) -> str:
        self._roles[f"AROAMADE{len(self._roles)}"] = object()
        return "interloper"


@pytest.mark.usefixtures("endpoint")  # the sandbox, so its extensions are installed
def test_a_role_is_looked_up_while_another_is_made() -> None:
    moto_threads.install()  # installed with the sandbox's extensions; asking again is a no-op
    backend = iam_backends[ACCOUNT]["global"]
    backend.roles["AROAINTERLOPER"] = _Interloper(backend.roles)
    try:
        with pytest.raises(NotFoundException):
            backend.get_role("nobody")  # walks every role: reads the interloper's name
        assert backend.get_role_by_arn(_Interloper.arn).name == "interloper"
    finally:
        backend.roles.clear()
