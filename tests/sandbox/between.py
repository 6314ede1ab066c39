"""A second call started between a first one's check and its keeping: how the sandbox's tests
show that a create AWS makes atomic is atomic in the sandbox too."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest


def second_between(
    monkeypatch: pytest.MonkeyPatch,
    keeper: tuple[type, str],
    first: Callable[[], Any],
    second: Callable[[], Any],
    refusal: type[Exception],
) -> list[Exception]:
    """Run `first`, starting `second` on another thread just before the first keeps what it
    made (`keeper`'s method); answer the refusals `second` met."""
    refused: list[Exception] = []

    def run_second() -> None:
        try:
            second()
        except refusal as error:
            refused.append(error)

    other = threading.Thread(target=run_second)
    cls, name = keeper
    keep = getattr(cls, name)

    def first_being_kept(self: Any, *args: Any, **kwargs: Any) -> Any:
        if other.ident is None:
            other.start()
            other.join(timeout=0.5)
        return keep(self, *args, **kwargs)

    monkeypatch.setattr(cls, name, first_being_kept)
    first()
    other.join(timeout=10)
    return refused
