"""What the app drivers deploy — a target (a service or a preview) and a line of its logs — and
the sessions they share."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from capstan.cloud.aws.session import AwsSession
from capstan.cloud.credentials import utcnow

TargetKind = Literal["web_server", "worker", "static_website"]


@dataclass(frozen=True)
class Target:
    resource_id: str  # "svc_…" (a service) or "pvw_…" (a preview)
    project_id: str  # "prj_…"
    kind: TargetKind
    # web servers and static websites: "<name>.<hostname_suffix>.<domain>"; workers: None
    hostname: str | None


@dataclass(frozen=True)
class LogLine:
    timestamp: datetime
    message: str


class TargetDriver:
    """Synchronous boto3 work on targets (callers run it through `Cloud.run` in a thread).

    `customer`: a session in the organization's account (the assumed role); `operator`:
    Capstan's own account, which holds the Route 53 hosted zone of `domain`.
    """

    def __init__(
        self,
        customer: AwsSession,
        operator: AwsSession,
        *,
        domain: str,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._customer = customer
        self._operator = operator
        self._domain = domain.rstrip(".")
        self._clock = clock
        self._region = customer.endpoint.region
