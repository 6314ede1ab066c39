"""EC2's regional quotas, enforced in moto: VPCs, internet gateways and security groups per
region, counted over what exists in that account and region (the default VPC included, as in
AWS), at the values of `quotas.quotas()`.

Past a quota, CreateVpc, CreateInternetGateway and CreateSecurityGroup fail with the code and
message AWS answers (`VpcLimitExceeded`, `InternetGatewayLimitExceeded`,
`SecurityGroupLimitExceeded`). What EC2 makes on its own as part of a call it already counted —
the default VPC of a new region, the default security group of a new VPC — is not refused.

`install()` adds the checks (once per process).
"""

from __future__ import annotations

import threading
from typing import Any

from moto.ec2.exceptions import EC2ClientError
from moto.ec2.models.internet_gateways import InternetGatewayBackend
from moto.ec2.models.security_groups import SecurityGroupBackend
from moto.ec2.models.vpcs import VPCBackend

from capstan_sandbox.cloud.quotas import quotas

_MARK = "_capstan_ec2_quotas"
_install_lock = threading.Lock()


class VpcLimitExceeded(EC2ClientError):
    def __init__(self) -> None:
        super().__init__("VpcLimitExceeded", "The maximum number of VPCs has been reached.")


class InternetGatewayLimitExceeded(EC2ClientError):
    def __init__(self) -> None:
        super().__init__(
            "InternetGatewayLimitExceeded",
            "The maximum number of internet gateways has been reached.",
        )


class SecurityGroupLimitExceeded(EC2ClientError):
    def __init__(self) -> None:
        super().__init__(
            "SecurityGroupLimitExceeded",
            "The maximum number of security groups has been reached.",
        )


def security_group_count(backend: Any) -> int:
    """Security groups in the backend's region, in every VPC (default groups included)."""
    return sum(len(groups) for groups in backend.groups.values())


def install() -> None:
    with _install_lock:
        if getattr(VPCBackend.create_vpc, _MARK, False):
            return
        create_vpc = VPCBackend.create_vpc
        create_gateway = InternetGatewayBackend.create_internet_gateway
        create_group = SecurityGroupBackend.create_security_group

        def checked_create_vpc(self: Any, *args: Any, **kwargs: Any) -> Any:
            if not kwargs.get("is_default") and len(self.vpcs) >= quotas().vpcs_per_region:
                raise VpcLimitExceeded()
            return create_vpc(self, *args, **kwargs)

        def checked_create_gateway(self: Any, *args: Any, **kwargs: Any) -> Any:
            if len(self.internet_gateways) >= quotas().internet_gateways_per_region:
                raise InternetGatewayLimitExceeded()
            return create_gateway(self, *args, **kwargs)

        def checked_create_group(self: Any, *args: Any, **kwargs: Any) -> Any:
            limit = quotas().security_groups_per_region
            if not kwargs.get("is_default") and security_group_count(self) >= limit:
                raise SecurityGroupLimitExceeded()
            return create_group(self, *args, **kwargs)

        setattr(checked_create_vpc, _MARK, True)
        VPCBackend.create_vpc = checked_create_vpc  # type: ignore[method-assign]
        InternetGatewayBackend.create_internet_gateway = checked_create_gateway  # type: ignore[method-assign]
        SecurityGroupBackend.create_security_group = checked_create_group  # type: ignore[method-assign]


__all__ = [
    "InternetGatewayLimitExceeded",
    "SecurityGroupLimitExceeded",
    "VpcLimitExceeded",
    "install",
    "security_group_count",
]
