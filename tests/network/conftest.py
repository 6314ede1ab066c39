from __future__ import annotations

from collections.abc import Iterator

import pytest

from capstan.sandbox.cloud import quotas
from tests.sandbox.conftest import endpoint


@pytest.fixture
def restore_quotas() -> Iterator[None]:
    """Quotas are process-wide: a test that changes them gives them back."""
    before = quotas.quotas()
    yield
    quotas.configure(**{name: getattr(before, name) for name in before.__dataclass_fields__})


__all__ = ["endpoint", "restore_quotas"]
