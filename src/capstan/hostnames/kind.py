"""Hostname claims as a kind: one table that every kind serving a public hostname writes to
(`service.claim`); no routes and no reconciler of its own."""

from __future__ import annotations

from capstan.hostnames.models import HostnameClaim
from capstan.registry import ResourceKind

KIND = ResourceKind(name="hostnames", models=(HostnameClaim,))
