"""ECS `CreateService` for a name already taken, refused as ECS refuses it.

moto's `CreateService` replaces a service of the same name in the cluster, whatever it runs. ECS
refuses it while that service is ACTIVE — `InvalidParameterException`, "Creation of service was
not idempotent." — unless the request is a retry of the one that made it: the same `clientToken`
and the same parameters, answered with the service as it is. A deleted service's name is free
again here at once (moto marks it INACTIVE when it is deleted; ECS drains it first and refuses
its name meanwhile).

`install()` adds the check to moto's ECS responses (once per process).
"""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any

from moto.core.responses import ActionResult
from moto.ecs.exceptions import InvalidParameterException
from moto.ecs.responses import EC2ContainerServiceResponse

NOT_IDEMPOTENT = "Creation of service was not idempotent."
# On moto's service: the (clientToken, request fingerprint) of the CreateService that made it.
_MADE_BY = "_capstan_made_by"
_MARK = "_capstan_ecs_services"
_install_lock = threading.Lock()


def request_of(request: dict[str, Any]) -> tuple[str | None, str]:
    """The request's client token and a fingerprint of everything else it asks."""
    rest = {key: value for key, value in request.items() if key != "clientToken"}
    fingerprint = hashlib.sha256(json.dumps(rest, sort_keys=True).encode()).hexdigest()
    return request.get("clientToken"), fingerprint


def check_create(existing: Any, made_by: tuple[str | None, str]) -> bool:
    """Whether a CreateService of `made_by` answers `existing` (a moto service of its name, or
    None) as it is: True for a retry of the request that made it, False when the name is free;
    raises ECS's refusal otherwise."""
    if existing is None or existing.status == "INACTIVE":
        return False
    token, _ = made_by
    if token is not None and getattr(existing, _MADE_BY, None) == made_by:
        return True
    raise InvalidParameterException(NOT_IDEMPOTENT)


def install() -> None:
    with _install_lock:
        if getattr(EC2ContainerServiceResponse, _MARK, False):
            return
        create_service = EC2ContainerServiceResponse.create_service

        def checked_create_service(self: EC2ContainerServiceResponse) -> Any:
            request = json.loads(self.body or "{}")
            cluster = str(request.get("cluster") or "default").split("/")[-1]
            key = f"{cluster}:{request.get('serviceName')}"
            made_by = request_of(request)
            existing = self.ecs_backend.services.get(key)
            if check_create(existing, made_by):
                return ActionResult({"service": existing})
            answer = create_service(self)
            made = self.ecs_backend.services.get(key)
            if made is not None:
                setattr(made, _MADE_BY, made_by)
            return answer

        EC2ContainerServiceResponse.create_service = checked_create_service  # type: ignore[method-assign]
        setattr(EC2ContainerServiceResponse, _MARK, True)
