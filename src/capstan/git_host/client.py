"""PLACEHOLDER — replaced by the git host work."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from capstan.config import Settings


@asynccontextmanager
async def open_git_host(settings: Settings) -> AsyncIterator[Any]:
    yield None
