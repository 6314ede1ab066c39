"""The simulator's knobs: how long simulated AWS takes, process-wide like moto's state.

A module of their own, read by the simulator and by what IAM and ECS do at once
(`iam_propagation`, `service_linked`), which need the delays but not the simulator.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, fields, replace
from typing import Any


@dataclass(frozen=True)
class Knobs:
    """How long simulated AWS takes (seconds; 0 = as soon as the simulator sees the work)."""

    build_seconds: float = 2.0
    task_start_seconds: float = 2.0
    # How long tasks that never become healthy keep ECS trying before the circuit breaker trips.
    circuit_breaker_seconds: float = 10.0
    log_interval_seconds: float = 5.0
    metrics_interval_seconds: float = 10.0
    # How often the simulator looks at moto's state.
    tick_seconds: float = 0.05
    # How long ElastiCache Serverless takes to create, modify or delete a cache.
    cache_seconds: float = 2.0
    # How long RDS takes to create, modify or delete a DB instance.
    database_seconds: float = 2.0
    # How often RDS rotates the master passwords it manages (`rds_passwords`); 0 = each
    # secret's own schedule, RDS's 7 days unless changed.
    database_password_rotation_seconds: float = 0.0
    # How long a CloudFront distribution's change takes to deploy, and an invalidation to finish.
    distribution_seconds: float = 0.5
    invalidation_seconds: float = 0.5
    # How long IAM takes to propagate a change (it is eventually consistent): a role younger than
    # this cannot be assumed, by a caller or a service, and a policy put on a role grants only
    # after it (`iam_propagation`). 0 = at once.
    iam_propagation_seconds: float = 3.0
    # How long after ECS makes its service-linked role (a new account's first cluster) ECS still
    # cannot assume it: its clusters and services, the call that made it among them, are refused
    # meanwhile (see `service_linked`). 0 = usable at once.
    service_linked_role_seconds: float = 0.0


_lock = threading.Lock()
_current = Knobs()


def knobs() -> Knobs:
    """The knobs in force in this process."""
    return _current


def configure(**changes: Any) -> Knobs:
    """Change knobs (unknown names are an error); answers the knobs before the change."""
    global _current
    known = {item.name for item in fields(Knobs)}
    unknown = set(changes) - known
    if unknown:
        raise TypeError(f"unknown simulator knobs: {', '.join(sorted(unknown))}")
    with _lock:
        before = _current
        _current = replace(before, **{k: float(v) for k, v in changes.items()})
    return before
