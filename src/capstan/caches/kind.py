"""Caches as a kind: they live in the project's subnets, so they need its network."""

from __future__ import annotations

from capstan.caches.reconcile import CacheReconciler
from capstan.caches.router import router
from capstan.kit.kind import networked_kind

KIND = networked_kind(
    "caches", CacheReconciler, router, leftovers=("serverless cache", "security group")
)
