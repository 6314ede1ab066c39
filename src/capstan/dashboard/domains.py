"""The custom domains a service page shows (its overview's live part), read through the API."""

from __future__ import annotations

from typing import Any

from capstan.dashboard.api import Api


async def domains_of(api: Api, base: str, kind: str, tab: str) -> list[dict[str, Any]] | None:
    """A web server's domains on its overview; None where the page shows none."""
    if kind != "web_servers" or tab != "overview":
        return None
    found: list[dict[str, Any]] = (await api.get(f"{base}/domains"))["domains"]
    return found
