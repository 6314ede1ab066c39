"""An in-memory cache cloud for unit tests of the cache reconciler, as controller-runtime's fake
client serves its users: it keeps the caches and security groups `CacheDriver` would make in one
account and region and answers the same calls with the same contract, and the test, not a clock,
says when the cloud's work is done (`finish`, `give_up`).

What it does not emulate: AWS's API shapes, IAM, quotas, tags, CloudWatch's data points — those
are `CacheDriver`'s and the sandbox's, and the end-to-end tests in `tests/caches` cover them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from capstan.cloud.caches import (
    NETWORK_NOT_READY,
    CacheMetrics,
    CacheSpec,
    CacheState,
    CacheStatus,
)
from capstan.cloud.errors import RetryableCloudError, TerminalCloudError


@dataclass
class FakeCache:
    status: CacheStatus
    data_storage_gb: int
    project_id: str


@dataclass
class FakeCaches:
    """One account's caches in one region. `networks`: the (project, generation) pairs whose
    network is made; `refusal`: an error every call raises until it is cleared (a quota, a
    permission the customer took away)."""

    caches: dict[str, FakeCache] = field(default_factory=dict)
    groups: set[str] = field(default_factory=set)
    networks: set[tuple[str, int]] = field(default_factory=set)
    refusal: TerminalCloudError | None = None
    calls: list[str] = field(default_factory=list)

    # -- what the test does to the cloud -------------------------------------------------------

    def finish(self, cache_id: str) -> None:
        """The cloud's work on the cache is done: made or changed (available), or gone."""
        cache = self.caches[cache_id]
        if cache.status == "deleting":
            del self.caches[cache_id]
        else:
            cache.status = "available"

    def give_up(self, cache_id: str) -> None:
        """The cloud could not make the cache."""
        self.caches[cache_id].status = "failed"

    # -- the driver's calls (`CacheCloud`) ----------------------------------------------------

    def describe(self, cache_id: str) -> CacheState | None:
        self._call("describe")
        cache = self.caches.get(cache_id)
        return self._state(cache) if cache is not None else None

    def ensure(self, spec: CacheSpec) -> CacheState:
        self._call("ensure")
        cache = self.caches.get(spec.cache_id)
        if cache is None:
            if (spec.project_id, spec.network_generation) not in self.networks:
                raise RetryableCloudError(
                    NETWORK_NOT_READY, "The project's network is not complete yet."
                )
            self.groups.add(spec.cache_id)
            cache = FakeCache("creating", spec.data_storage_gb, spec.project_id)
            self.caches[spec.cache_id] = cache
        elif cache.status == "available" and cache.data_storage_gb < spec.data_storage_gb:
            cache.status, cache.data_storage_gb = "modifying", spec.data_storage_gb
        return self._state(cache)

    def delete(self, cache_id: str) -> bool:
        self._call("delete")
        cache = self.caches.get(cache_id)
        if cache is not None:
            if cache.status in ("available", "failed"):
                cache.status = "deleting"
            return False
        self.groups.discard(cache_id)
        return True

    def metrics(self, cache_id: str) -> CacheMetrics:
        self._call("metrics")
        return CacheMetrics(0, 0, 0, 0, 3600, series={})

    def _call(self, name: str) -> None:
        self.calls.append(name)
        if self.refusal is not None:
            raise self.refusal

    @staticmethod
    def _state(cache: FakeCache) -> CacheState:
        endpoint = "cache.fake.amazonaws.com:6379" if cache.status == "available" else None
        return CacheState(cache.status, endpoint, cache.data_storage_gb)
