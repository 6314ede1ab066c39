"""PLACEHOLDER — replaced by the sandbox cloud work."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class _Placeholder:
    url: str | None = None

    def stop(self) -> None:
        pass


def start_sandbox_cloud() -> _Placeholder:
    return _Placeholder()
