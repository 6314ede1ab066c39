"""Size limits AWS enforces and moto does not, so that what would fail in AWS fails here too.

- SSM `PutParameter`: a value holds at most 4096 characters in the `Standard` tier and 8192 in
  `Advanced`; `Intelligent-Tiering` stores a value as standard when it fits, else advanced (and
  the parameter shows the tier it got, as in AWS).
- ECS `RegisterTaskDefinition`: a task definition holds at most 65,536 bytes — `ClientException`,
  "Actual length: 'N'. Max allowed length is '65536' bytes." (`task_definition_bytes` says what
  is counted); an ARM64 one for Fargate is a Linux one (`check_runtime_platform`).
- EC2 `CreateSecurityGroup`: a group's name and description are at most 255 characters of
  `a-zA-Z0-9`, spaces and `._-:/()#,@[]+=&;{}!$*` (no apostrophe, nothing beyond ASCII), and a
  name does not start with `sg-` — `InvalidParameterValue`.

`install()` adds the checks (once per process).
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

from moto.ec2.exceptions import EC2ClientError
from moto.ec2.models.security_groups import SecurityGroupBackend
from moto.ecs.exceptions import EcsClientException
from moto.ecs.responses import EC2ContainerServiceResponse
from moto.ssm.exceptions import ValidationException
from moto.ssm.models import SimpleSystemManagerBackend

STANDARD_VALUE_CHARS = 4096
ADVANCED_VALUE_CHARS = 8192
TASK_DEFINITION_BYTES = 64 * 1024
_GROUP_TEXT = re.compile(r"[a-zA-Z0-9 ._\-:/()#,@\[\]+=&;{}!$*]{1,255}")
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


def task_definition_bytes(request: dict[str, Any]) -> int:
    """A `RegisterTaskDefinition` request's task definition as ECS's limit counts it here: every
    parameter but `tags`, as compact JSON (no white space), each character beyond ASCII written
    as its escape (`\\u00e9`; two for one beyond the BMP), in bytes.

    AWS does not say how it counts; this is the conservative reading, the larger of the ways the
    request's definition could be counted. White space is left out, as ECS's figure cannot depend
    on a client's formatting (botocore, for one, puts a space after every `,` and `:`). An escape
    takes 6 or 12 bytes where UTF-8 takes 2 to 4, so the count is never below the definition's
    UTF-8 JSON, and it is what Python's SDK sends, spaces aside. `tags` are not part of the
    definition: ECS keeps them apart (`TagResource` changes them without a new revision). What
    ECS adds to a definition it keeps (its ARN, revision, status, required attributes) is in no
    request and not counted: a caller keeps a margin for it.
    """
    definition = {key: value for key, value in request.items() if key != "tags"}
    return len(json.dumps(definition, separators=(",", ":")).encode())


def check_runtime_platform(request: dict[str, Any]) -> None:
    """ECS's refusal of an ARM64 Fargate task definition that is not Linux: Fargate runs ARM64
    tasks only as "Linux containers on Fargate" (`runtimePlatform`,
    https://docs.aws.amazon.com/AmazonECS/latest/developerguide/task_definition_parameters.html;
    https://docs.aws.amazon.com/AmazonECS/latest/APIReference/API_RuntimePlatform.html). The
    message is the sandbox's words."""
    platform = request.get("runtimePlatform") or {}
    if platform.get("cpuArchitecture") != "ARM64":
        return
    if (
        "FARGATE" in (request.get("requiresCompatibilities") or [])
        and (platform.get("operatingSystemFamily") or "LINUX") != "LINUX"
    ):
        raise EcsClientException(
            "Fargate supports the ARM64 CPU architecture only with the LINUX operating system "
            f"family, not {platform.get('operatingSystemFamily')}."
        )


def check_task_definition(request: dict[str, Any]) -> None:
    """ECS's refusal of a task definition over its size, or of a platform Fargate lacks."""
    check_runtime_platform(request)
    size = task_definition_bytes(request)
    if size > TASK_DEFINITION_BYTES:
        raise EcsClientException(
            f"Actual length: '{size}'. Max allowed length is '{TASK_DEFINITION_BYTES}' bytes."
        )


def check_security_group(name: str, description: str) -> None:
    """EC2's refusal of a security group's name or description outside its character set."""
    for parameter, value in (("GroupName", name), ("GroupDescription", description)):
        if not _GROUP_TEXT.fullmatch(value or ""):
            raise EC2ClientError(
                "InvalidParameterValue",
                f"Value ({value}) for parameter {parameter} is invalid. Valid values are strings "
                "of at most 255 characters from a-zA-Z0-9 ._-:/()#,@[]+=&;{}!$*",
            )
    if name.lower().startswith("sg-"):
        raise EC2ClientError(
            "InvalidParameterValue", f"Group names may not be in the format sg-*: {name}"
        )


def install() -> None:
    with _install_lock:
        if getattr(SimpleSystemManagerBackend.put_parameter, _MARK, False):
            return
        put_parameter = SimpleSystemManagerBackend.put_parameter
        register = EC2ContainerServiceResponse.register_task_definition
        create_group = SecurityGroupBackend.create_security_group

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
            check_task_definition(json.loads(self.body or "{}"))
            return register(self)

        def checked_create_group(
            self: SecurityGroupBackend, name: str, description: str, *args: Any, **kwargs: Any
        ) -> Any:
            check_security_group(name, description)
            return create_group(self, name, description, *args, **kwargs)

        setattr(checked_put_parameter, _MARK, True)
        SimpleSystemManagerBackend.put_parameter = checked_put_parameter  # type: ignore[method-assign]
        EC2ContainerServiceResponse.register_task_definition = checked_register  # type: ignore[method-assign]
        SecurityGroupBackend.create_security_group = checked_create_group  # type: ignore[method-assign]
