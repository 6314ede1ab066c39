"""Looks that many passes ask at once, made as one call (group commit): `Coalescer`.

A reconciler's passes run in parallel threads, and while many deployments build, each of their
passes asks CodeBuild about its own build — one `BatchGetBuilds` each, though the call takes up
to 100 ids. A `Coalescer` lets the first asker call at once with its key; askers that arrive
while that call is in flight wait for it to end and then one of them calls with all their keys.
Nobody waits for a window to fill: one asker alone is answered by one call, as before.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


@dataclass
class _Slot(Generic[V]):
    done: bool = False
    value: V | None = None
    error: BaseException | None = None


class Coalescer(Generic[K, V]):
    """`get(key)` answers `fetch([keys…])[key]` (None when the answer lacks it), with the keys
    of every asker waiting meanwhile in the same call (at most `limit` a call)."""

    def __init__(self, fetch: Callable[[list[K]], Mapping[K, V]], *, limit: int = 100) -> None:
        self._fetch = fetch
        self._limit = limit
        self._changed = threading.Condition()
        self._pending: dict[K, _Slot[V]] = {}
        self._calling = False

    def get(self, key: K) -> V | None:
        with self._changed:
            slot = self._pending.setdefault(key, _Slot())
            while self._calling and not slot.done:
                self._changed.wait()
            if not slot.done:
                batch = self._take(key)
                self._calling = True
        if not slot.done:
            self._call(batch)
        if slot.error is not None:
            raise slot.error
        return slot.value

    def _take(self, key: K) -> dict[K, _Slot[V]]:
        """Up to `limit` waiting keys, `key` first, out of the queue (under the lock)."""
        others = [other for other in self._pending if other != key]
        keys = [key, *others[: self._limit - 1]]
        return {item: self._pending.pop(item) for item in keys}

    def _call(self, batch: dict[K, _Slot[V]]) -> None:
        error: BaseException | None = None
        answers: Mapping[K, V] = {}
        try:
            answers = self._fetch(list(batch))
        except BaseException as raised:  # every asker of this call gets the call's error
            error = raised
        with self._changed:
            for key, slot in batch.items():
                slot.value, slot.error, slot.done = answers.get(key), error, True
            self._calling = False
            self._changed.notify_all()


__all__ = ["Coalescer"]
