from __future__ import annotations

from tests.sandbox.conftest import endpoint

__all__ = ["endpoint"]
