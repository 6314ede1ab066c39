"""AWS's account quotas, enforced by the sandbox: what a fresh AWS account refuses, refused here.

On by default, at AWS's default values (in `--dev` too), so a design that would run out of a
quota in a real account runs out in the sandbox first. Process-wide like moto's state:

- `CAPSTAN_SANDBOX_QUOTAS="vpcs_per_region=10,codebuild_concurrent_builds=0"` sets values when the
  sandbox cloud starts (`capstan sandbox`, `capstan server --dev`, the tests' sandboxes);
- `configure(name=value, ...)` changes them in a running process (tests: raise one, hit it, lower
  the use, see the resource recover), answering the values before the change; `changed(...)`
  does so for a block, and gives the values back after it.

Each check raises the error AWS raises (its code and a message in AWS's words), so the driver's
error translation is what is tested, not a sandbox-only path.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields, replace

ENVIRONMENT_VARIABLE = "CAPSTAN_SANDBOX_QUOTAS"


@dataclass(frozen=True)
class Quotas:
    """AWS's defaults (Service Quotas, as documented for a new account)."""

    vpcs_per_region: int = 5
    internet_gateways_per_region: int = 5
    security_groups_per_region: int = 2500
    load_balancers_per_region: int = 50  # Application Load Balancers
    rules_per_load_balancer: int = 100  # the default rule counts, as in AWS
    # Certificates per Application Load Balancer, default certificates not counted
    # (https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-limits.html).
    certificates_per_load_balancer: int = 25
    host_header_value_chars: int = 128
    target_group_name_chars: int = 32
    codebuild_concurrent_builds: int = 60
    acm_domain_name_chars: int = 64
    cloudfront_origin_access_controls: int = 100
    cloudfront_functions: int = 100
    # Alternate domain names (CNAMEs) per distribution
    # (https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/cloudfront-limits.html).
    cloudfront_aliases_per_distribution: int = 100
    acm_certificates: int = 2500
    db_instances_per_region: int = 40
    db_subnet_groups_per_region: int = 50
    # Manual DB instance snapshots, a deletion's final snapshot among them (Amazon RDS quotas,
    # https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/CHAP_Limits.html).
    db_manual_snapshots_per_region: int = 100
    # Fargate On-Demand vCPU resource count: the vCPUs of an account's tasks running at once in a
    # region ("New AWS accounts might have initial lower quotas that can increase over time").
    fargate_vcpus_per_region: int = 6
    # Docker Hub, not AWS: anonymous pulls per hour from one address (CodeBuild's are shared).
    dockerhub_anonymous_pulls_per_hour: int = 10
    # One page of FilterLogEvents: at most 10,000 events (and 1 MB, always enforced).
    log_events_per_page: int = 10000


_lock = threading.Lock()
_current = Quotas()
_loaded = False


def parse(text: str) -> dict[str, int]:
    """`"a=1, b=2"` -> {"a": 1, "b": 2}; unknown names and non-integers are an error."""
    known = {item.name for item in fields(Quotas)}
    values: dict[str, int] = {}
    for part in filter(None, (piece.strip() for piece in text.split(","))):
        name, _, value = part.partition("=")
        name = name.strip()
        if name not in known:
            listed = ", ".join(sorted(known))
            raise ValueError(f"{ENVIRONMENT_VARIABLE}: unknown quota {name!r} (known: {listed})")
        try:
            values[name] = int(value)
        except ValueError:
            raise ValueError(f"{ENVIRONMENT_VARIABLE}: {name} must be a whole number") from None
    return values


def quotas() -> Quotas:
    """The quotas in force (the environment's, read once, then `configure`'s changes)."""
    global _current, _loaded
    with _lock:
        if not _loaded:
            _current = replace(_current, **parse(os.environ.get(ENVIRONMENT_VARIABLE, "")))
            _loaded = True
        return _current


def configure(**changes: int) -> Quotas:
    """Change quotas in this process; answers the quotas before the change."""
    global _current
    before = quotas()
    known = {item.name for item in fields(Quotas)}
    unknown = set(changes) - known
    if unknown:
        raise TypeError(f"unknown sandbox quotas: {', '.join(sorted(unknown))}")
    with _lock:
        _current = replace(before, **{name: int(value) for name, value in changes.items()})
    return before


@contextmanager
def changed(**changes: int) -> Iterator[Quotas]:
    """`changes` in force for the block (the quotas then in force), as they were after it."""
    before = configure(**changes)
    try:
        yield quotas()
    finally:
        configure(**{name: getattr(before, name) for name in changes})


__all__ = ["ENVIRONMENT_VARIABLE", "Quotas", "changed", "configure", "parse", "quotas"]
