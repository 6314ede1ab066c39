"""Route 53's CreateHostedZone, idempotent per caller reference as in AWS.

AWS refuses a second CreateHostedZone with a caller reference it has seen
(`HostedZoneAlreadyExists`), which is what makes two racing "create the zone if missing" calls
end in one zone. moto makes a second zone instead; records written to one are then missing from
the other, and a delete finds nothing to delete. `install()` adds the check (once per process,
atomically with the creation).
"""

from __future__ import annotations

import threading
from typing import Any

from moto.route53.exceptions import Route53ClientError
from moto.route53.models import Route53Backend

_MARK = "_capstan_caller_reference_checked"
_install_lock = threading.Lock()
_create_lock = threading.Lock()


class HostedZoneAlreadyExists(Route53ClientError):
    def __init__(self, name: str, caller_reference: str) -> None:
        super().__init__(
            "HostedZoneAlreadyExists",
            f"A hosted zone has already been created with the specified caller reference "
            f"{caller_reference!r} (zone {name}).",
        )


def install() -> None:
    with _install_lock:
        if getattr(Route53Backend.create_hosted_zone, _MARK, False):
            return
        original = Route53Backend.create_hosted_zone

        def create_hosted_zone(self: Route53Backend, name: str, *args: Any, **kwargs: Any) -> Any:
            reference = kwargs.get("caller_reference", args[1] if len(args) > 1 else None)
            with _create_lock:
                if reference:
                    for zone in list(self.zones.values()):
                        if zone.caller_reference == reference:
                            raise HostedZoneAlreadyExists(zone.name, reference)
                return original(self, name, *args, **kwargs)

        setattr(create_hosted_zone, _MARK, True)
        Route53Backend.create_hosted_zone = create_hosted_zone  # type: ignore[method-assign]
