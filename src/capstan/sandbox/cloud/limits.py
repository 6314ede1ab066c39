"""Size limits AWS enforces and moto does not, so that what would fail in AWS fails here too.

- SSM `PutParameter`: a value holds at most 4096 characters in the `Standard` tier and 8192 in
  `Advanced`; `Intelligent-Tiering` stores a value as standard when it fits, else advanced (and
  the parameter shows the tier it got, as in AWS).
- ECS `RegisterTaskDefinition`: a task definition is at most 64 KiB (the request's JSON).

`install()` adds the checks (once per process).
"""

from __future__ import annotations

import threading
from typing import Any

from moto.ecs.exceptions import EcsClientException
from moto.ecs.responses import EC2ContainerServiceResponse
from moto.ssm.exceptions import ValidationException
from moto.ssm.models import SimpleSystemManagerBackend

STANDARD_VALUE_CHARS = 4096
ADVANCED_VALUE_CHARS = 8192
TASK_DEFINITION_BYTES = 64 * 1024
_MARK = "_capstan_limits"
_install_lock = threading.Lock()


def parameter_tier(tier: str | None, value: str) -> str:
    """The tier a parameter of `value` is stored in; ValidationException when it cannot be."""
    tier = tier or "Standard"
    if tier == "Intelligent-Tiering":
        tier = "Standard" if len(value) <= STANDARD_VALUE_CHARS else "Advanced"
    if tier == "Standard" and len(value) > STANDARD_VALUE_CHARS:
        raise ValidationException(
            f"Standard tier parameters support a maximum parameter value of "
            f"{STANDARD_VALUE_CHARS} characters. To create a larger parameter value, upgrade "
            f"the parameter to use the advanced-parameter tier."
        )
    if len(value) > ADVANCED_VALUE_CHARS:
        raise ValidationException(
            f"1 validation error detected: Value at 'value' failed to satisfy constraint: "
            f"Member must have length less than or equal to {ADVANCED_VALUE_CHARS}."
        )
    return tier


def install() -> None:
    with _install_lock:
        if getattr(SimpleSystemManagerBackend.put_parameter, _MARK, False):
            return
        put_parameter = SimpleSystemManagerBackend.put_parameter
        register = EC2ContainerServiceResponse.register_task_definition

        def checked_put_parameter(
            self: SimpleSystemManagerBackend,
            name: str,
            description: str,
            value: str,
            *args: Any,
            **kwargs: Any,
        ) -> Any:
            # moto's PutParameter passes the tier by keyword.
            kwargs["tier"] = parameter_tier(kwargs.get("tier"), value or "")
            return put_parameter(self, name, description, value, *args, **kwargs)

        def checked_register(self: EC2ContainerServiceResponse) -> Any:
            size = len(self.body.encode() if isinstance(self.body, str) else self.body)
            if size > TASK_DEFINITION_BYTES:
                raise EcsClientException(
                    f"The task definition is {size} bytes; a task definition holds at most "
                    f"{TASK_DEFINITION_BYTES} bytes."
                )
            return register(self)

        setattr(checked_put_parameter, _MARK, True)
        SimpleSystemManagerBackend.put_parameter = checked_put_parameter  # type: ignore[method-assign]
        EC2ContainerServiceResponse.register_task_definition = checked_register  # type: ignore[method-assign]
