"""Paths of a simulated static website build: its publish directory and root directory as the
build's variables give them, and the directories its checked-out source has."""

from __future__ import annotations

from typing import Any


def has_directory(outcome: dict[str, Any], wanted: str) -> bool:
    """Whether the checked-out source (the files its `capstan-sandbox.json` declares) has the
    directory `wanted`."""
    declared = [directory(str(name)) for name in dict(outcome.get("image_files") or {})]
    return any(name.startswith(f"{wanted}/") for name in declared)


def directory(path: str) -> str:
    """`./dist/` and `dist` are the same directory."""
    parts = [part for part in path.strip().split("/") if part not in ("", ".")]
    return "/".join(parts)
