from __future__ import annotations

from collections.abc import Iterator

import pytest

from capstan_sandbox.cloud import quotas
from tests.harness import Org, RunningServer
from tests.sandbox.conftest import endpoint


@pytest.fixture
def restore_quotas() -> Iterator[None]:
    """Quotas are process-wide: a test that changes them gives them back."""
    before = quotas.quotas()
    yield
    quotas.configure(**{name: getattr(before, name) for name in before.__dataclass_fields__})


@pytest.fixture
def fresh_org(server: RunningServer) -> Iterator[Org]:
    """A new organization: its own sandbox account, with nothing in it but the default VPC."""
    org = server.new_org()
    try:
        yield org
    finally:
        org.close()


__all__ = ["endpoint", "fresh_org", "restore_quotas"]
